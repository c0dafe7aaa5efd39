"""Authoring: a study, its rating scale, its items, its participants and their assignments."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.core.validators import MinValueValidator, RegexValidator
from django.db import models
from django.utils.functional import cached_property
from django.utils.translation import gettext_lazy as _

from core.comparative import asks
from core.settings import AnalysisSettings


def new_token() -> str:
    """Return an unguessable token for an invitation or an open link (256 bits)."""
    return secrets.token_urlsafe(32)


def new_completion_code() -> str:
    return secrets.token_hex(4).upper()


class Study(models.Model):
    class Status(models.TextChoices):
        DRAFT = "draft", _("Draft")
        OPEN = "open", _("Open")
        PAUSED = "paused", _("Paused")
        CLOSED = "closed", _("Closed")

    class SourceOrder(models.TextChoices):
        SPREAD = "spread", _("Outputs of one source spread apart")
        TOGETHER = "together", _("Outputs of one source one after the other")

    class Display(models.TextChoices):
        TEXT = "text", _("Single text")
        PAIR = "pair", _("Sentence pair")
        COREF = "coref", _("Coreference passage")

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="studies")
    slug = models.SlugField(
        max_length=60, unique=True,
        validators=[RegexValidator(r"^[a-z0-9][a-z0-9-]*$", "Use lower-case letters, digits and dashes.")],
    )
    title = models.CharField(max_length=200)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DRAFT)
    display = models.CharField(max_length=10, choices=Display.choices, default=Display.TEXT)
    language = models.CharField(max_length=8, choices=settings.LANGUAGES, default="en")
    consent_text = models.TextField(blank=True, help_text="Markdown, shown before the instructions.")
    instructions = models.TextField(blank=True, help_text="Markdown, shown before the first item.")
    completion_text = models.TextField(blank=True, help_text="Markdown, shown on the last page.")
    # Assignment design (docs/running-a-study.md); items_per_participant 0 = every item.
    items_per_participant = models.PositiveIntegerField(default=0)
    annotators_per_item = models.PositiveIntegerField(default=3, validators=[MinValueValidator(1)])
    duplicates_per_participant = models.PositiveIntegerField(default=0)
    duplicate_min_gap = models.PositiveIntegerField(default=5, validators=[MinValueValidator(2)])
    seed = models.BigIntegerField(default=0)
    # Coreference studies: show the gold passage beside the system's, or the system's only.
    show_gold = models.BooleanField(default=True)
    # Items that name a `source` (docs/systems.md): "spread" scatters the outputs of one source
    # across a participant's order; "together" shows them one after the other (their order
    # shuffled per participant and recorded).
    source_order = models.CharField(max_length=10, choices=SourceOrder.choices,
                                    default=SourceOrder.SPREAD, db_default=SourceOrder.SPREAD)
    # Crowd platforms: one open link per study; the completion code is shown at the end.
    open_token = models.CharField(max_length=64, default=new_token, unique=True)
    completion_code = models.CharField(max_length=32, default=new_completion_code)
    completion_url = models.URLField(blank=True, help_text="e.g. Prolific's completion URL.")
    # Screening (docs/running-a-study.md): an annotator passes with at least
    # screening_pass_count correct screening items, or (no count) at least this share of them.
    screening_pass_share = models.FloatField(default=1.0)
    screening_pass_count = models.PositiveIntegerField(null=True, blank=True)
    # What a screened-out crowd annotator is shown: a code distinct from the completion code.
    screened_out_code = models.CharField(max_length=32, default=new_completion_code)
    screened_out_url = models.URLField(blank=True, help_text="e.g. Prolific's screened-out URL.")
    # Attention checks: the next page warns after this many failed checks (0: never warns);
    # the participant is stopped after check_stop_after failed checks (0: never stopped).
    check_warn_after = models.PositiveSmallIntegerField(default=1)
    check_stop_after = models.PositiveSmallIntegerField(default=2)
    analysis_settings = models.JSONField(default=dict, blank=True)
    # How many pseudonyms (A1, A2, …) have been handed out: the next one is A<this + 1>. Only
    # ever incremented (under the study's row lock), so a deleted participant leaves a gap.
    pseudonyms_issued = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    # When the status last changed: an answer to an item shown before a close or a pause is
    # accepted for CONCORD_ANSWER_GRACE_SECONDS after it (docs/lifecycle.md).
    status_changed_at = models.DateTimeField(null=True, blank=True)
    # An archived study is hidden from the default study list and read-only.
    archived_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "studies"

    def __str__(self) -> str:
        return self.slug

    @property
    def is_open(self) -> bool:
        return self.status == self.Status.OPEN

    @property
    def is_archived(self) -> bool:
        return self.archived_at is not None

    @property
    def analysis(self) -> AnalysisSettings:
        """The study's analysis settings as the one settings object (`core.settings`): read it
        so, never as keys of the stored ``analysis_settings`` dict."""
        return AnalysisSettings.from_mapping(self.analysis_settings or {})

    @analysis.setter
    def analysis(self, value: AnalysisSettings) -> None:
        self.analysis_settings = value.to_dict()

    @cached_property
    def question_list(self) -> list[Question]:
        """The study's questions in order (one query, cached on the instance)."""
        return list(self.questions.order_by("position"))

    @property
    def primary_question(self) -> Question:
        """The first question: the one a single-question study asks."""
        return self.question_list[0]


class Question(models.Model):
    """One question asked about every item of a study, with its own scale and rubric.

    A study asks one or more questions per item (SummEval's four, MT's adequacy and fluency):
    the item page shows all of them under one Confirm, and every analysis runs per question on
    its raw scale and on each of its reductions. ``reductions`` is an ordered list of
    ``{"name": …, "map": {raw value (as a string key): code}}`` (a list, because PostgreSQL's
    jsonb does not keep the order of an object's keys). Once a study is open its questions never
    change (the answers would no longer mean what they meant).
    """

    class Missing(models.TextChoices):
        ANSWERED = "", _("Answered")
        CANT_JUDGE = "cant_judge", _("Can't judge")
        SKIPPED = "skipped", _("Not answered")

    class Kind(models.TextChoices):
        SCALE = "scale", _("Scale")
        PAIRWISE = "pairwise", _("Pairwise preference")
        RANKING = "ranking", _("Ranking")
        BWS = "bws", _("Best–worst scaling")

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="questions")
    # A scale question is asked about every item without outputs; a comparative one (pairwise,
    # ranking, best–worst) about every item with outputs (a comparison), with its options
    # (core/comparative.py: ties, strength) in ``comparison`` and no ``values``
    # (docs/comparisons.md).
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.SCALE,
                            db_default=Kind.SCALE)
    comparison = models.JSONField(default=dict, blank=True, db_default={})
    key = models.SlugField(max_length=40, help_text="Names the question in files and results.")
    position = models.PositiveSmallIntegerField(default=0)
    prompt = models.CharField(max_length=500, blank=True, help_text="Shown above the options.")
    required = models.BooleanField(default=True)
    allow_comment = models.BooleanField(default=False)
    allow_cant_judge = models.BooleanField(default=False)
    preset = models.CharField(max_length=60, blank=True)
    values = models.JSONField(help_text="Ordered list of the scale's values (numbers); empty "
                                        "for a comparative question.")
    labels = models.JSONField(default=dict, help_text="{value: label} shown to annotators.")
    rubric = models.TextField(blank=True, help_text="Markdown, shown once above the questions.")
    reductions = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["study", "position"]
        constraints = [
            models.UniqueConstraint(fields=["study", "key"], name="question_unique_key"),
            models.UniqueConstraint(fields=["study", "position"], name="question_unique_position"),
        ]

    def __str__(self) -> str:
        return f"{self.study_id}:{self.key}"

    def label_for(self, value: float) -> str:
        return self.labels.get(_key(value), _key(value))

    def options(self) -> list[tuple[str, str]]:
        return [(_key(v), self.labels.get(_key(v), "")) for v in self.values]

    @property
    def is_comparative(self) -> bool:
        return self.kind != Question.Kind.SCALE

    def applies_to(self, item: Item) -> bool:
        """Whether this question is asked about ``item``: a comparative question about a
        comparison (an item with outputs) of a size it judges, a scale question about every
        other item (`core.comparative.asks`)."""
        return asks(self.kind, len(item.outputs))

    def reduction_maps(self) -> dict[str, dict[str, float]]:
        """Return ``{name: {raw value key: code}}`` in the question's order."""
        return {r["name"]: dict(r["map"]) for r in self.reductions}

    @property
    def domain(self) -> list[float]:
        return [float(v) for v in self.values]


def _key(value: float) -> str:
    """Return the canonical string of a scale value (1.0 -> "1") used as a JSON key."""
    number = float(value)
    return str(int(number)) if number.is_integer() else repr(number)


class Item(models.Model):
    class Role(models.TextChoices):
        MAIN = "main", _("Main item")
        SCREENING = "screening", _("Screening item")
        CHECK = "check", _("Attention check")
        # An output only shown inside comparisons (a pairwise, ranking or best–worst study
        # without a scale question): never assigned on its own.
        OUTPUT = "output", _("Output shown in comparisons")

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="items")
    external_id = models.CharField(max_length=200, help_text="The `id` column of the import.")
    position = models.PositiveIntegerField(help_text="Order of import.")
    text = models.TextField(blank=True)
    text_a = models.TextField(blank=True)
    text_b = models.TextField(blank=True)
    is_control = models.BooleanField(default=False)
    # The system that produced this item and the source (input document, segment or prompt) it
    # answers (docs/systems.md); blank: none. Items of one source across systems form a block.
    system = models.CharField(max_length=200, blank=True, default="", db_default="")
    source = models.CharField(max_length=200, blank=True, default="", db_default="")
    metrics = models.JSONField(default=dict, blank=True)
    features = models.JSONField(default=dict, blank=True)
    meta = models.JSONField(default=dict, blank=True)
    # Coreference items: the annotated documents as imported (tokens and chains, or RuCoCo JSON).
    annotation = models.JSONField(default=dict, blank=True)
    # A screening or check item's known answers {question key: value} and tolerances
    # {question key: distance}; a main item has neither.
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MAIN)
    gold = models.JSONField(default=dict, blank=True)
    tolerance = models.JSONField(default=dict, blank=True)
    # A check item's chosen place among a participant's main presentations (1 = first);
    # None: a seeded random place.
    check_at = models.PositiveIntegerField(null=True, blank=True)
    # A comparison: the external ids of the outputs (items of the same study) it compares, in
    # its canonical order (the order of the design or of the import); empty for every other
    # item. The annotator sees them in an order shuffled per participant (core/comparative.py).
    outputs = models.JSONField(default=list, blank=True, db_default=[])

    class Meta:
        ordering = ["study", "position"]
        constraints = [
            models.UniqueConstraint(fields=["study", "external_id"], name="item_unique_external_id"),
        ]
        indexes = [models.Index(fields=["study", "system", "source"], name="item_system_source")]

    def __str__(self) -> str:
        return f"{self.study_id}:{self.external_id}"


class SystemScore(models.Model):
    """A system-level score of an automatic metric, imported from a `system,metric,value` file
    (docs/systems.md): compared with the humans' system scores by the systems analysis where the
    items carry no per-item value of that metric."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="system_scores")
    system = models.CharField(max_length=200)
    metric = models.CharField(max_length=200)
    value = models.FloatField()

    class Meta:
        ordering = ["study", "metric", "system"]
        constraints = [
            models.UniqueConstraint(fields=["study", "system", "metric"],
                                    name="system_score_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.study_id}:{self.system}:{self.metric}"


class Membership(models.Model):
    """A researcher's role in a study: viewer, editor or owner.

    A viewer reads everything and changes nothing; an editor changes the study, its items,
    participants and analyses but cannot delete it or share it; an owner can do everything. A
    researcher without a membership sees the study as if it did not exist, superusers included
    (the admin is an operator's tool, not a way into researchers' data).
    """

    class Role(models.TextChoices):
        VIEWER = "viewer", _("Viewer")
        EDITOR = "editor", _("Editor")
        OWNER = "owner", _("Owner")

    RANK = {Role.VIEWER: 1, Role.EDITOR: 2, Role.OWNER: 3}

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="study_memberships")
    role = models.CharField(max_length=10, choices=Role.choices)
    added_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                 on_delete=models.SET_NULL, related_name="+")
    added_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study", "user"]
        constraints = [models.UniqueConstraint(fields=["study", "user"], name="membership_unique")]

    def __str__(self) -> str:
        return f"{self.study_id}:{self.user_id} {self.role}"

    @classmethod
    def allows(cls, role: str | None, need: str) -> bool:
        """Whether ``role`` (None: no membership) is at least ``need``."""
        return role is not None and cls.RANK[cls.Role(role)] >= cls.RANK[cls.Role(need)]


class StudyEvent(models.Model):
    """The audit trail of a study: who changed what, when (never an annotator's data).

    The entry outlives its study (``study`` becomes null when the study is deleted; the slug
    stays), so a deletion is itself recorded.
    """

    class Action(models.TextChoices):
        OPEN = "open", _("Opened")
        PAUSE = "pause", _("Paused")
        CLOSE = "close", _("Closed")
        ARCHIVE = "archive", _("Archived")
        UNARCHIVE = "unarchive", _("Unarchived")
        DELETE = "delete", _("Deleted")
        ITEM_EDIT = "item_edit", _("Item edited")
        ITEM_DELETE = "item_delete", _("Item deleted")
        REVOKE = "revoke", _("Link revoked")
        EXCLUDE = "exclude", _("Excluded from the analysis")
        INCLUDE = "include", _("Included in the analysis again")
        PARTICIPANT_DELETE = "participant_delete", _("Participant deleted with their answers")
        MEMBER_ADD = "member_add", _("Researcher added")
        MEMBER_CHANGE = "member_change", _("Role changed")
        MEMBER_REMOVE = "member_remove", _("Researcher removed")
        SETTINGS = "settings", _("Settings changed")
        CLONE = "clone", _("Cloned")
        INVITE = "invite", _("Invitation links created")
        CONTROLS = "controls", _("Random control pairs added")
        ITEMS = "items", _("Items uploaded")
        COMPARISONS = "comparisons", _("Comparisons built")
        SYSTEM_SCORES = "system_scores", _("System-level scores imported")
        SYSTEM_SCORES_DELETE = "system_scores_delete", _("System-level scores deleted")
        JUDGE_ANSWERS = "judge_answers", _("Judge's answers imported")
        JUDGE_RUN_DELETE = "judge_run_delete", _("Judge's run deleted")
        JUDGE_DELETE = "judge_delete", _("Judge deleted")

    study = models.ForeignKey(Study, null=True, blank=True, on_delete=models.SET_NULL,
                              related_name="events")
    study_slug = models.CharField(max_length=60)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                             on_delete=models.SET_NULL, related_name="+")
    action = models.CharField(max_length=20, choices=Action.choices)
    at = models.DateTimeField(auto_now_add=True)
    # Ids and statuses only (an item's id, a pseudonym, "open -> closed"), never answers.
    detail = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["study", "-at"], name="studyevent_study_at")]

    def __str__(self) -> str:
        return f"{self.study_slug} {self.action} {self.at:%Y-%m-%d %H:%M}"


class Participant(models.Model):
    class Screening(models.TextChoices):
        NONE = "", _("No screening")
        PENDING = "pending", _("Screening")
        PASSED = "passed", _("Passed the screening")
        FAILED = "failed", _("Screened out")

    class Source(models.TextChoices):
        INVITE = "invite", _("Invitation link")
        OPEN = "open", _("Open link")
        PROLIFIC = "prolific", _("Prolific")
        MTURK = "mturk", _("MTurk")
        IMPORT = "import", _("Imported responses")

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="participants")
    token = models.CharField(max_length=64, default=new_token, unique=True)
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.INVITE)
    external_id = models.CharField(max_length=200, blank=True,
                                   help_text="Platform id (PROLIFIC_PID, workerId) or imported id.")
    label = models.CharField(max_length=200, blank=True, help_text="Researcher's note.")
    meta = models.JSONField(default=dict, blank=True)
    order_seed = models.BigIntegerField(default=0)
    n_assigned = models.PositiveIntegerField(default=0)
    n_answered = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    consented_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # A crowd-platform participant's binding to the browser that first opened the open link
    # (annotation.binding): the secret of the signed token its pages carry. Empty: not bound.
    binding = models.CharField(max_length=64, blank=True)
    # The n of the pseudonym "An": given at the participant's first stored answer, never changed.
    pseudonym_number = models.PositiveIntegerField(null=True, blank=True)
    # Set by the periodic reclaim (annotation.reclaim.participants_reclaim) when the participant
    # left items unanswered for CONCORD_RECLAIM_AFTER_SECONDS: their unanswered assignments then
    # no longer count towards an item's overlap, so new participants get those items. Cleared
    # when they come back (their answers and their list of items stay theirs).
    reclaimed_at = models.DateTimeField(null=True, blank=True)
    # Screening: "" (the study has none), pending, passed or failed; the score once decided.
    screening = models.CharField(max_length=10, choices=Screening.choices, blank=True)
    screening_correct = models.PositiveIntegerField(null=True, blank=True)
    screening_total = models.PositiveIntegerField(null=True, blank=True)
    # Attention checks answered and failed; stopped_at: stopped after too many failures.
    checks_answered = models.PositiveIntegerField(default=0)
    checks_failed = models.PositiveIntegerField(default=0)
    checks_warned = models.PositiveIntegerField(default=0)  # failures the pages have warned of
    # The positions of the participant's attention checks (the answer path evaluates those).
    check_positions = models.JSONField(default=list, blank=True)
    stopped_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["study", "id"]
        constraints = [
            models.UniqueConstraint(fields=["study", "pseudonym_number"],
                                    name="participant_unique_pseudonym"),
            models.UniqueConstraint(
                fields=["study", "source", "external_id"],
                condition=~models.Q(external_id=""),
                name="participant_unique_external_id",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.study_id}:{self.external_id or self.pk}"

    @property
    def is_complete(self) -> bool:
        return self.completed_at is not None

    @property
    def status(self) -> str:
        """The participant's state in a few words, as the study's pages show it.

        A participant who will answer no more is never "in progress": screened out, stopped by
        failed attention checks, or left unfinished when the study was closed. (``self.study``
        costs no query when the participant came through ``study.participants``.)
        """
        if self.revoked_at is not None:
            return "revoked"
        if self.screening == self.Screening.FAILED:
            return "screened out"
        if self.stopped_at is not None:
            return "stopped by the attention checks"
        if self.completed_at is not None:
            return "complete"
        if self.study.status == Study.Status.CLOSED:
            return "unfinished when the study closed" if self.n_answered else "did not start"
        if self.n_answered:
            return "in progress"
        return "started" if self.consented_at is not None else "not started"

    @property
    def pseudonym(self) -> str:
        """"A3" for the third annotator to answer; "" before a first answer."""
        return "" if self.pseudonym_number is None else f"A{self.pseudonym_number}"


class Assignment(models.Model):
    """One presentation of an item to a participant, at a recorded position.

    presentation 1 is the first showing; 2 is the repeat of a duplicated item.
    """

    participant = models.ForeignKey(Participant, on_delete=models.CASCADE, related_name="assignments")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="assignments")
    position = models.PositiveIntegerField()
    presentation = models.PositiveSmallIntegerField(default=1)
    # When the item page first showed it: an answer to an item that was on screen is accepted
    # even after the study closes, and a first presentation whose repeat has been shown can no
    # longer be revised (going back must not let the annotator compare the two).
    shown_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["participant", "position"]
        constraints = [
            models.UniqueConstraint(fields=["participant", "position"], name="assignment_unique_position"),
            models.UniqueConstraint(
                fields=["participant", "item", "presentation"], name="assignment_unique_presentation"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.participant_id}@{self.position}:{self.item_id}/{self.presentation}"
