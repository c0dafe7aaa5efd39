# ExportJob, moved from the analysis app (analysis 0003 renamed its table to exports_exportjob):
# the model is created in Django's state only, the table and its rows are already there. Its
# content type moves with it, so that permissions granted on it are kept.

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def content_type_to_exports(apps, schema_editor):
    ContentType = apps.get_model('contenttypes', 'ContentType')
    if not ContentType.objects.filter(app_label='exports', model='exportjob').exists():
        ContentType.objects.filter(app_label='analysis', model='exportjob').update(
            app_label='exports')


def content_type_to_analysis(apps, schema_editor):
    ContentType = apps.get_model('contenttypes', 'ContentType')
    if not ContentType.objects.filter(app_label='analysis', model='exportjob').exists():
        ContentType.objects.filter(app_label='exports', model='exportjob').update(
            app_label='analysis')


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('analysis', '0003_export_jobs_move_to_exports'),
        ('contenttypes', '0002_remove_content_type_name'),
        ('studies', '0001_initial'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='ExportJob',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('what', models.CharField(max_length=10)),
                        ('format', models.CharField(max_length=10)),
                        ('status', models.CharField(choices=[('queued', 'Queued'), ('running', 'Running'), ('done', 'Done'), ('failed', 'Failed')], default='queued', max_length=10)),
                        ('progress', models.PositiveSmallIntegerField(default=0)),
                        ('message', models.CharField(blank=True, max_length=200)),
                        ('path', models.CharField(blank=True, max_length=500)),
                        ('size_bytes', models.BigIntegerField(default=0)),
                        ('rows', models.BigIntegerField(default=0)),
                        ('attempts', models.PositiveSmallIntegerField(default=0)),
                        ('error', models.TextField(blank=True)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('finished_at', models.DateTimeField(blank=True, null=True)),
                        ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('study', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='export_jobs', to='studies.study')),
                    ],
                    options={
                        'ordering': ['-created_at', '-id'],
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(content_type_to_exports, content_type_to_analysis),
        # A Job records when a worker started it; export jobs did not until they became Jobs.
        migrations.AddField(
            model_name='exportjob',
            name='started_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
