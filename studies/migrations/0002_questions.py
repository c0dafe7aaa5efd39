# Several questions per item: every study's one Scale becomes its first Question (key "rating"),
# reductions become an ordered list (PostgreSQL's jsonb does not keep an object's key order, so a
# preset study takes its preset's order; a custom one keeps the order stored). Assignments record
# when the item page first showed them.

import django.db.models.deletion
from django.db import migrations, models


def scales_to_questions(apps, schema_editor):
    from core.stats.scales import PRESETS

    Scale = apps.get_model("studies", "Scale")
    Question = apps.get_model("studies", "Question")
    questions = []
    for scale in Scale.objects.all().iterator():
        stored = dict(scale.reductions or {})
        order = list(PRESETS.get(scale.preset, {}).get("reductions", {})) or list(stored)
        names = [n for n in order if n in stored] + [n for n in stored if n not in order]
        questions.append(Question(
            study_id=scale.study_id, key="rating", position=0, prompt="", required=True,
            preset=scale.preset, values=scale.values, labels=scale.labels, rubric=scale.rubric,
            reductions=[{"name": n, "map": stored[n]} for n in names]))
    Question.objects.bulk_create(questions, batch_size=1000)


def questions_to_scales(apps, schema_editor):
    Scale = apps.get_model("studies", "Scale")
    Question = apps.get_model("studies", "Question")
    Scale.objects.bulk_create(
        Scale(study_id=q.study_id, preset=q.preset, values=q.values, labels=q.labels,
              rubric=q.rubric, reductions={r["name"]: r["map"] for r in q.reductions})
        for q in Question.objects.filter(position=0))


class Migration(migrations.Migration):

    dependencies = [
        ('studies', '0001_initial'),
    ]

    operations = [
        migrations.AddField(
            model_name='assignment',
            name='shown_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.CreateModel(
            name='Question',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('key', models.SlugField(help_text='Names the question in files and results.', max_length=40)),
                ('position', models.PositiveSmallIntegerField(default=0)),
                ('prompt', models.CharField(blank=True, help_text='Shown above the options.', max_length=500)),
                ('required', models.BooleanField(default=True)),
                ('allow_comment', models.BooleanField(default=False)),
                ('allow_cant_judge', models.BooleanField(default=False)),
                ('preset', models.CharField(blank=True, max_length=60)),
                ('values', models.JSONField(help_text="Ordered list of the scale's values (numbers).")),
                ('labels', models.JSONField(default=dict, help_text='{value: label} shown to annotators.')),
                ('rubric', models.TextField(blank=True, help_text='Markdown, shown once above the questions.')),
                ('reductions', models.JSONField(blank=True, default=list)),
                ('study', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='questions', to='studies.study')),
            ],
            options={
                'ordering': ['study', 'position'],
            },
        ),
        migrations.RunPython(scales_to_questions, questions_to_scales),
        migrations.DeleteModel(
            name='Scale',
        ),
        migrations.AddConstraint(
            model_name='question',
            constraint=models.UniqueConstraint(fields=('study', 'key'), name='question_unique_key'),
        ),
        migrations.AddConstraint(
            model_name='question',
            constraint=models.UniqueConstraint(fields=('study', 'position'), name='question_unique_position'),
        ),
    ]
