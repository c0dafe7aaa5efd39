"""ImportJob, moved here from annotation (issue 22): the model joins this app's state on the
table annotation created (annotation 0003), which keeps its name and its rows; nothing in the
database changes but the content type's app label (so its permissions follow the model)."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def content_type_follows(apps, schema_editor):
    ContentType = apps.get_model('contenttypes', 'ContentType')
    if not ContentType.objects.filter(app_label='imports', model='importjob').exists():
        ContentType.objects.filter(app_label='annotation', model='importjob').update(
            app_label='imports')


def content_type_back(apps, schema_editor):
    ContentType = apps.get_model('contenttypes', 'ContentType')
    if not ContentType.objects.filter(app_label='annotation', model='importjob').exists():
        ContentType.objects.filter(app_label='imports', model='importjob').update(
            app_label='annotation')


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('annotation', '0004_importjob_to_imports'),
        ('contenttypes', '0002_remove_content_type_name'),
        ('studies', '0009_study_completion_text'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='ImportJob',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('status', models.CharField(choices=[('queued', 'Queued'), ('running', 'Running'), ('done', 'Done'), ('failed', 'Failed')], default='queued', max_length=10)),
                        ('progress', models.PositiveSmallIntegerField(default=0)),
                        ('message', models.CharField(blank=True, max_length=200)),
                        ('attempts', models.PositiveSmallIntegerField(default=0)),
                        ('error', models.TextField(blank=True)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('started_at', models.DateTimeField(blank=True, null=True)),
                        ('finished_at', models.DateTimeField(blank=True, null=True)),
                        ('sent_at', models.DateTimeField(blank=True, null=True)),
                        ('deliveries', models.PositiveSmallIntegerField(default=0)),
                        ('heartbeat_at', models.DateTimeField(blank=True, null=True)),
                        ('what', models.CharField(choices=[('items', 'items'), ('responses', 'responses')], max_length=10)),
                        ('dry_run', models.BooleanField(default=False)),
                        ('filename', models.CharField(max_length=255)),
                        ('size_bytes', models.BigIntegerField(default=0)),
                        ('folder', models.CharField(blank=True, max_length=64)),
                        ('options', models.JSONField(blank=True, default=dict)),
                        ('summary', models.JSONField(blank=True, default=dict)),
                        ('problems', models.JSONField(blank=True, default=list)),
                        ('omitted', models.PositiveIntegerField(default=0)),
                        ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('study', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='import_jobs', to='studies.study')),
                    ],
                    options={
                        'db_table': 'annotation_importjob',
                        'ordering': ['-created_at', '-id'],
                        'abstract': False,
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(content_type_follows, content_type_back),
    ]
