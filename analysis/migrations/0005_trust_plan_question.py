# A trust plan names its question: a run now computes trust per question × scale × items, and
# the plan's key becomes "<question>:<scale>:<items>".  Plans only live while a run fans out; one
# planned before this migration computed the primary question, "rating" in a study that existed
# before questions did.  Should it name the wrong question, its key matches no input of the
# finisher, which then computes that trust in-process (timings["trust_fallback"]): never wrong.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('analysis', '0004_trust_plan'),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='trustplan',
            name='trust_plan_unique',
        ),
        migrations.AddField(
            model_name='trustplan',
            name='question',
            field=models.CharField(default='rating', max_length=40),
            preserve_default=False,
        ),
        migrations.AddConstraint(
            model_name='trustplan',
            constraint=models.UniqueConstraint(fields=('run', 'question', 'scale', 'items'), name='trust_plan_unique_question'),
        ),
    ]
