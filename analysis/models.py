"""Analysis runs: the record of each run (a `jobs.models.Job` with settings, timings) and its results."""

from __future__ import annotations

from django.db import models

from jobs.models import Job
from studies.models import Study


class AnalysisRun(Job):
    """One analysis of a study: its settings, its progress (a `Job`) and its results document."""

    noun = "run"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="analysis_runs")
    settings = models.JSONField(default=dict)
    code_version = models.CharField(max_length=64, blank=True)
    timings = models.JSONField(default=dict, blank=True)
    results = models.JSONField(null=True, blank=True)

    class Meta(Job.Meta):
        indexes = [models.Index(fields=["study", "status", "-created_at"], name="run_latest_idx")]

    def __str__(self) -> str:
        return f"{self.study_id}#{self.pk} {self.status} {self.progress}%"

    @property
    def sections_by_time(self) -> list[tuple[str, float]]:
        """The seconds of each section of the build, largest first (a jsonb object keeps no
        order of its own)."""
        sections = (self.timings or {}).get("sections_s") or {}
        return sorted(sections.items(), key=lambda kv: (-kv[1], kv[0]))


class TrustPlan(models.Model):
    """One fanned-out trust computation of a run: what its chunks compute on, and its chord.

    A run whose exact trust coefficients involve many annotators computes the subset alphas of
    each such ``(question, scale, items)`` in ``n_chunks`` Celery tasks (``analysis.fanout``).  The plan
    holds everything a chunk needs (the ratings matrix, level, domain), so no chunk reloads the
    study, and the ``fingerprint`` the finisher compares with the answers as they are then.
    ``sent_at`` is set once the chord is out: a redelivered start must not send a second one.
    """

    run = models.ForeignKey(AnalysisRun, on_delete=models.CASCADE, related_name="trust_plans")
    question = models.CharField(max_length=40)  # the question's key (a slug)
    scale = models.CharField(max_length=100)
    items = models.CharField(max_length=10)  # all | simple
    level = models.CharField(max_length=10)
    domain = models.JSONField()  # the scale's value domain, as floats
    k = models.PositiveSmallIntegerField()  # annotators with an answer here (rows of ratings)
    n_items = models.PositiveIntegerField()
    # (k × n_items) float64, little-endian, row-major, nan = not rated; zlib-compressed
    ratings = models.BinaryField()
    fingerprint = models.CharField(max_length=64)  # core.stats.trust.fingerprint of the above
    n_chunks = models.PositiveIntegerField()
    started_at = models.DateTimeField()  # when the run fanned out
    sent_at = models.DateTimeField(null=True, blank=True)  # when the chord was sent

    class Meta:
        ordering = ["run", "id"]
        constraints = [models.UniqueConstraint(fields=["run", "question", "scale", "items"],
                                               name="trust_plan_unique_question")]

    def __str__(self) -> str:
        return f"run {self.run_id} {self.key} k={self.k} in {self.n_chunks} chunks"

    @property
    def key(self) -> str:
        """Name the computation as the run's timings do: ``"rating:raw:all"``,
        ``"coherence:raw:simple"``."""
        return f"{self.question}:{self.scale}:{self.items}"


class TrustChunk(models.Model):
    """The alphas of one chunk of subsets of a plan, computed by one task of the run's chord.

    Stored here (not in the result backend) so that a redelivered chunk is computed once and
    the merge reads exactly what was computed.
    """

    plan = models.ForeignKey(TrustPlan, on_delete=models.CASCADE, related_name="chunks")
    start = models.BigIntegerField()
    stop = models.BigIntegerField()
    alphas = models.BinaryField()  # float64, little-endian, nan = undefined
    seconds = models.FloatField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["plan", "start"]
        constraints = [models.UniqueConstraint(fields=["plan", "start"], name="trust_chunk_unique")]

    def __str__(self) -> str:
        return f"plan {self.plan_id} [{self.start}, {self.stop})"


class LiveQuality(models.Model):
    """The quality flags of one participant that can be known while a study collects answers.

    Written by the periodic task `analysis.tasks.live_quality` (every
    CONCORD_LIVE_QUALITY_SECONDS, `analysis.live`), never inside an annotator's request; read by
    the participants page.  One row per participant, a fixed number of columns: nothing here grows
    with the study.  Provisional: the analysis run's rules (on all answers, with every rule's
    settings) are the record.
    """

    participant = models.OneToOneField("studies.Participant", on_delete=models.CASCADE,
                                       primary_key=True, related_name="live_quality")
    computed_at = models.DateTimeField()
    floor_s = models.FloatField()  # the too-fast floor applied (the study's fixed floor)
    n_timed = models.PositiveIntegerField(default=0)  # answered presentations with a time
    n_fast = models.PositiveIntegerField(default=0)  # of which faster than floor_s
    fast_share = models.FloatField(null=True, blank=True)  # None: too few timed answers
    too_fast = models.BooleanField(default=False)
    longest_run = models.PositiveIntegerField(default=0)  # identical answers in a row
    n_answers = models.PositiveIntegerField(default=0)  # answers the run was counted on
    straight_lining = models.BooleanField(default=False)

    def __str__(self) -> str:
        return f"participant {self.participant_id} at {self.computed_at:%Y-%m-%d %H:%M}"

    @property
    def flags(self) -> list[str]:
        return [label for flagged, label in ((self.too_fast, "too fast"),
                                             (self.straight_lining, "straight-lining"))
                if flagged]
