# ExportJob moves to the exports app. Its rows stay where they are: the table is renamed to the
# name the exports app gives it, and only Django's model state changes hands.

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('analysis', '0002_trust_chunks_export_jobs'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.AlterModelTable(name='exportjob', table='exports_exportjob'),
            ],
            state_operations=[
                migrations.DeleteModel(name='ExportJob'),
            ],
        ),
    ]
