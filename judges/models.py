"""LLM judges of a study, their runs and their answers: kept apart from the people's responses
(`annotation.Response`/`Answer`), so that no statistic about the annotators can read them
(issue 27; docs/judges.md)."""

from __future__ import annotations

from django.db import models

from studies.models import Item, Question, Study


class Judge(models.Model):
    """A judge of a study (a model with its prompt and settings), named uniquely in it."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="judges")
    name = models.CharField(max_length=200)
    model = models.CharField(max_length=200, blank=True)
    prompt = models.TextField(blank=True, help_text="The prompt's text or its version label.")
    version = models.CharField(max_length=200, blank=True)
    date = models.CharField(max_length=40, blank=True, help_text="ISO date, as given.")
    temperature = models.FloatField(null=True, blank=True)
    notes = models.TextField(blank=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["study", "name"],
                                               name="judge_unique_name")]

    def __str__(self) -> str:
        return f"{self.study_id} judge {self.name}"


class JudgeRun(models.Model):
    """One run of a judge over the study (several runs measure its self-consistency)."""

    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="runs")
    label = models.CharField(max_length=200)
    created = models.DateTimeField(auto_now_add=True)
    source = models.CharField(max_length=200, blank=True, help_text="The file it came from.")
    n_answers = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["judge", "created", "id"]
        constraints = [models.UniqueConstraint(fields=["judge", "label"],
                                               name="judgerun_unique_label")]

    def __str__(self) -> str:
        return f"{self.judge_id} run {self.label}"


class JudgeAnswer(models.Model):
    """A judge's answer to one question about one item (a comparison, for a comparative
    question) in one run: a value of the scale, or the judgment as stored (`core.comparative`)
    with its canonical value."""

    run = models.ForeignKey(JudgeRun, on_delete=models.CASCADE, related_name="answers")
    question = models.ForeignKey(Question, on_delete=models.CASCADE, related_name="+")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    value = models.FloatField(null=True, blank=True)
    choice = models.JSONField(null=True, blank=True)
    rationale = models.TextField(blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "question", "item"],
                                               name="judgeanswer_unique")]

    def __str__(self) -> str:
        return f"{self.run_id} {self.question_id} {self.item_id}"
