# The trust fan-out's plan gets its own table (TrustPlan: the ratings the chunks compute on, the
# chord's sent/started times) instead of a key in AnalysisRun.timings, and every TrustChunk belongs
# to a plan.  Chunk rows only live while a run fans out, so the old table is dropped, not migrated.

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('analysis', '0003_export_jobs_move_to_exports'),
    ]

    operations = [
        migrations.DeleteModel(
            name='TrustChunk',
        ),
        migrations.CreateModel(
            name='TrustPlan',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('scale', models.CharField(max_length=100)),
                ('items', models.CharField(max_length=10)),
                ('level', models.CharField(max_length=10)),
                ('domain', models.JSONField()),
                ('k', models.PositiveSmallIntegerField()),
                ('n_items', models.PositiveIntegerField()),
                ('ratings', models.BinaryField()),
                ('fingerprint', models.CharField(max_length=64)),
                ('n_chunks', models.PositiveIntegerField()),
                ('started_at', models.DateTimeField()),
                ('sent_at', models.DateTimeField(blank=True, null=True)),
                ('run', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='trust_plans', to='analysis.analysisrun')),
            ],
            options={
                'ordering': ['run', 'id'],
                'constraints': [models.UniqueConstraint(fields=('run', 'scale', 'items'), name='trust_plan_unique')],
            },
        ),
        migrations.CreateModel(
            name='TrustChunk',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('start', models.BigIntegerField()),
                ('stop', models.BigIntegerField()),
                ('alphas', models.BinaryField()),
                ('seconds', models.FloatField(default=0)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('plan', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='chunks', to='analysis.trustplan')),
            ],
            options={
                'ordering': ['plan', 'start'],
                'constraints': [models.UniqueConstraint(fields=('plan', 'start'), name='trust_chunk_unique')],
            },
        ),
    ]
