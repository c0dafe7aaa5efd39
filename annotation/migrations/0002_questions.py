# Several questions per item and revisions: a Response becomes one submission (one per
# revision, one current), its value moves to an Answer of the study's first question. The copy
# is one INSERT … SELECT, so it stays fast on a study of millions of answers.

import django.db.models.deletion
from django.db import migrations, models

COPY_VALUES = """
INSERT INTO annotation_answer (response_id, question_id, value, missing, comment)
SELECT r.id, q.id, r.value, CASE WHEN r.value IS NULL THEN 'skipped' ELSE '' END, ''
FROM annotation_response r
JOIN studies_participant p ON p.id = r.participant_id
JOIN studies_question q ON q.study_id = p.study_id AND q.position = 0
"""
COPY_BACK = """
UPDATE annotation_response SET value = (
    SELECT a.value FROM annotation_answer a
    JOIN studies_question q ON q.id = a.question_id AND q.position = 0
    WHERE a.response_id = annotation_response.id)
"""


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0001_initial'),
        ('studies', '0002_questions'),
    ]

    operations = [
        migrations.CreateModel(
            name='Answer',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('value', models.FloatField(blank=True, null=True)),
                ('missing', models.CharField(blank=True, choices=[('', 'Answered'), ('cant_judge', "Can't judge"), ('skipped', 'Not answered')], default='', max_length=10)),
                ('comment', models.TextField(blank=True)),
            ],
            options={
                'ordering': ['response', 'question'],
            },
        ),
        migrations.RemoveConstraint(
            model_name='response',
            name='response_unique_presentation',
        ),
        migrations.RemoveIndex(
            model_name='response',
            name='response_item_idx',
        ),
        migrations.AddField(
            model_name='response',
            name='is_current',
            field=models.BooleanField(default=True),
        ),
        migrations.AddField(
            model_name='response',
            name='revision',
            field=models.PositiveSmallIntegerField(default=1),
        ),
        migrations.AlterField(
            model_name='response',
            name='assignment',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='responses', to='studies.assignment'),
        ),
        migrations.AlterField(
            model_name='response',
            name='participant',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='responses', to='studies.participant'),
        ),
        migrations.AddConstraint(
            model_name='response',
            constraint=models.UniqueConstraint(fields=('participant', 'item', 'presentation', 'revision'), name='response_unique_revision'),
        ),
        migrations.AddConstraint(
            model_name='response',
            constraint=models.UniqueConstraint(condition=models.Q(('is_current', True)), fields=('participant', 'item', 'presentation'), name='response_one_current'),
        ),
        migrations.AddField(
            model_name='answer',
            name='question',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='answers', to='studies.question'),
        ),
        migrations.AddField(
            model_name='answer',
            name='response',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='answers', to='annotation.response'),
        ),
        migrations.AddConstraint(
            model_name='answer',
            constraint=models.UniqueConstraint(fields=('response', 'question'), name='answer_unique_question'),
        ),
        migrations.RunSQL(COPY_VALUES, COPY_BACK),
        migrations.RemoveField(
            model_name='response',
            name='value',
        ),
    ]
