"""ImportJob moved to the imports app (issue 22): gone from annotation's state only; its table,
annotation_importjob, stays as it is, with its rows (imports' 0001 takes the model over)."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0003_import_jobs'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name='ImportJob')],
            database_operations=[],
        ),
    ]
