"""Analysis runs: the record of each run (a `jobs.models.Job` with settings, timings) and its results."""

from __future__ import annotations

from django.db import models

from core.settings import AnalysisSettings
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
    def analysis(self) -> AnalysisSettings:
        """The run's settings as the one settings object (`core.settings`): what every step of
        the run reads, never the stored dict's keys (``settings`` is only its stored form)."""
        return AnalysisSettings.coerce(self.settings)

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


class RunBlob(models.Model):
    """A piece of what the tasks of a fanned-out run read (``analysis.sections``): a question's
    arrays, the study's rows, the document's head, or one task's part of the document.

    One value in pieces of at most ``PIECE`` bytes (``seq`` 0, 1, …), so no value nears
    PostgreSQL's 1 GB; every machine of a cluster reads them from the database.  Deleted when
    the run is stored.
    """

    PIECE = 64 << 20

    run = models.ForeignKey(AnalysisRun, on_delete=models.CASCADE, related_name="blobs")
    name = models.TextField()  # "question:<key>", "rows", "head", "part:<task>"
    seq = models.PositiveIntegerField()
    data = models.BinaryField()

    class Meta:
        ordering = ["run", "name", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "name", "seq"],
                                               name="run_blob_unique_piece")]

    def __str__(self) -> str:
        return f"run {self.run_id} {self.name} #{self.seq}"


class RunTask(models.Model):
    """One task of a fanned-out run and its time: the plan, a section group, the assembly.

    ``depends`` names the tasks it waited for, so the run's total work (the sum of ``seconds``)
    and its critical path (the longest chain, `core.results.groups.critical_path`) can be read
    back; ``done_at`` is set once its work is stored (a redelivered task then does nothing).
    The rows stay with the run: they are its record of where the time went.
    """

    run = models.ForeignKey(AnalysisRun, on_delete=models.CASCADE, related_name="tasks")
    name = models.TextField()  # "plan", "agreement:rating:raw", "competence:rating:raw:mace", …
    group = models.JSONField(null=True, blank=True)  # its section group (None: plan, assemble)
    depends = models.JSONField(default=list)
    seconds = models.FloatField(null=True, blank=True)
    host = models.TextField(blank=True)  # the worker that computed it
    started_at = models.DateTimeField(null=True, blank=True)
    done_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)  # the plan's: when the chord went out

    class Meta:
        ordering = ["run", "id"]
        constraints = [models.UniqueConstraint(fields=["run", "name"], name="run_task_unique")]

    def __str__(self) -> str:
        return f"run {self.run_id} {self.name} {self.seconds}"


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


class RunItem(models.Model):
    """One item of a finished run, in the study's order, with the questions it was simple on and
    its metric values.

    With `ItemGap` and `ItemLabel`, the records of a run that grow with its number of items: the
    run's document keeps their counts and summaries (``concord.results/3``, docs/results.md),
    these tables the records, written in one COPY each when the run finishes.
    """

    run = models.ForeignKey(AnalysisRun, on_delete=models.CASCADE, related_name="run_items",
                            db_index=False)
    position = models.PositiveIntegerField()  # 0-based, the study's item order
    item = models.TextField()  # the item's id (Item.external_id)
    simple = models.JSONField(default=list)  # keys of the questions on which it is simple
    # Its value of each metric of the document's ``item_gap_metrics`` (null: no gap), as the
    # run compared them with the humans.
    metrics = models.JSONField(default=list)

    class Meta:
        ordering = ["run", "position"]
        constraints = [models.UniqueConstraint(fields=["run", "position"],
                                               name="run_item_unique_position")]
        indexes = [models.Index(fields=["run", "item"], name="run_item_item_idx")]

    def __str__(self) -> str:
        return f"run {self.run_id} item {self.item}"


class ItemGap(models.Model):
    """One item's human aggregate on one question × scale × aggregate of a run.

    Each stands for the item's ``item_gaps`` records (docs/results.md): one per metric of
    ``item_gap_metrics`` with a value in its `RunItem`, gap = metric value − ``human``; stored
    once, not once per metric (seven times fewer rows for seven metrics).
    """

    run = models.ForeignKey(AnalysisRun, on_delete=models.CASCADE, related_name="item_gaps",
                            db_index=False)
    seq = models.PositiveIntegerField()  # its place among the run's rows, the records' order
    question = models.CharField(max_length=40)
    scale = models.TextField()
    aggregate = models.CharField(max_length=10)  # mean | mode
    position = models.PositiveIntegerField()  # the item: its RunItem's position
    human = models.FloatField()  # the human aggregate rescaled to [0, 1]

    class Meta:
        ordering = ["run", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="item_gap_unique_seq")]

    def __str__(self) -> str:
        return f"run {self.run_id} {self.question} {self.scale} {self.aggregate} #{self.position}"


class ItemLabel(models.Model):
    """One item's aggregated label of a run (an ``item_labels`` record of docs/results.md)."""

    run = models.ForeignKey(AnalysisRun, on_delete=models.CASCADE, related_name="item_labels",
                            db_index=False)
    seq = models.PositiveIntegerField()  # the record's place in the full document's item_labels
    question = models.CharField(max_length=40)
    scale = models.TextField()
    method = models.CharField(max_length=20)  # dawid_skene | mace
    item = models.TextField()
    label = models.FloatField(null=True)
    probability = models.FloatField(null=True)
    entropy = models.FloatField(null=True)
    n = models.PositiveIntegerField()  # answers to the item
    reason = models.TextField(blank=True)  # why label is null

    class Meta:
        ordering = ["run", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"],
                                               name="item_label_unique_seq")]
        indexes = [models.Index(fields=["run", "item"], name="item_label_item_idx")]

    def __str__(self) -> str:
        return f"run {self.run_id} {self.item} {self.method} {self.label}"
