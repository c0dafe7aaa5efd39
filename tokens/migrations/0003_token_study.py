# A token may be limited to one study (issue 23, point 19).

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('studies', '0013_system_source_db_default'),
        ('tokens', '0002_token_scope'),
    ]

    operations = [
        migrations.AddField(
            model_name='accesstoken',
            name='study',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='studies.study'),
        ),
    ]
