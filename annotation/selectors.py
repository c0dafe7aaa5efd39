"""Reads for the questionnaire: the participant behind a link and the next presentation."""

from __future__ import annotations

import json
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from statistics import median
from typing import Any, cast

from django.conf import settings
from django.db import connections, router
from django.db.backends.utils import CursorWrapper
from django.db.models import Count, Model, signals
from django.db.models.base import ModelState
from django.db.models.expressions import Col
from django.db.models.fields.related_descriptors import ForeignKeyDeferredAttribute
from django.db.models.query_utils import DeferredAttribute
from django.http import Http404

from core.comparative import shown_order
from studies.models import Assignment, Item, Participant, Question, Study

from .models import Response

# Every annotator request starts by resolving its link, and every item page by finding the resume
# point. The ORM spends most of that time compiling the SELECT (three joined models: ~0.9 ms of
# CPU against ~0.1 ms to run it), so these two statements are built once per database from the
# models' fields, and their rows become model instances through the fields' own converters,
# exactly as `select_related` makes them (docs/benchmarks.md).

# On PostgreSQL, parsing and planning were about half of the database's CPU per answer: the hot
# statements run as server-side prepared statements, once per pooled connection.
PREPARE_AFTER = 2


@contextmanager
def hot_cursor(alias: str) -> Iterator[CursorWrapper]:
    """Yield a cursor for the questionnaire's few hot statements (this module and services.py).

    On PostgreSQL it binds parameters on the server, so psycopg prepares a statement the
    second time a connection runs it; Django's own cursors bind on the client and never
    prepare (the connection's threshold only concerns cursors like this one). Elsewhere, and
    while queries are logged (DEBUG, assertNumQueries: Django cannot show the text of a prepared
    statement), it is the ordinary cursor.
    """
    connection = connections[alias]
    if connection.vendor != "postgresql" or connection.queries_logged:
        with connection.cursor() as cursor:
            yield cursor
        return
    from django.db.backends.postgresql.base import ServerBindingCursor

    connection.validate_thread_sharing()
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    raw = connection.connection
    if raw.prepare_threshold is None:
        raw.prepare_threshold = PREPARE_AFTER
    with connection.wrap_database_errors:
        # The stubs give ServerBindingCursor no base but Django's mixin; it is a psycopg Cursor.
        server_cursor = ServerBindingCursor(raw)  # type: ignore[call-arg]
    # make_cursor wraps a database cursor; the stubs have it take the wrapper already.
    with connection.make_cursor(server_cursor) as wrapped:  # type: ignore[arg-type]
        yield wrapped


# A row's converters of one column: its index, the converter functions and the column.
_Converters = tuple[int, tuple[Callable[[Any, Col, Any], Any], ...], Col]
# One model of a joined row: the model, its attnames, its columns' slice and their converters.
_Reader = tuple[type[Model], list[str], int, int, tuple[_Converters, ...]]


@dataclass(frozen=True)
class _Joined:
    """A SELECT of several models' concrete columns, and how to turn a row back into models."""

    alias: str
    columns: str
    readers: tuple[_Reader, ...]  # (model, attnames, start, stop, [(index, converters, col)])

    def instances(self, row: Sequence[Any]) -> list[Model | None]:
        """The row's models in order (None for a LEFT JOIN's missing row)."""
        connection = connections[self.alias]
        row = list(row)
        out: list[Model | None] = []
        for model, names, start, stop, converters in self.readers:
            for index, functions, col in converters:
                value = row[index]
                for function in functions:
                    value = function(value, col, connection)
                row[index] = value
            values = row[start:stop]
            out.append(None if values[0] is None else _from_db(model, self.alias, names, values))
        return out


def _from_db(model: type[Model], alias: str, names: list[str], values: list[Any]) -> Model:
    """``model.from_db(alias, names, values)`` for a row of all its concrete fields, without
    ``Model.__init__`` (a tenth of finding a link's participant in a profile of an answer,
    issue 26): the same attributes, set as ``__init__`` sets them (through no descriptor of
    their own), and the same state. A model that ``__init__`` must build (a listener of
    pre_init/post_init, a field with its own setter) is built by ``from_db``."""
    if not _plain(model) or signals.pre_init.has_listeners(model) \
            or signals.post_init.has_listeners(model):
        return model.from_db(alias, names, values)
    instance = model.__new__(model)
    instance.__dict__.update(zip(names, values, strict=True))
    state = instance._state = ModelState()
    state.adding = False
    state.db = alias
    return instance


@cache
def _plain(model: type[Model]) -> bool:
    """Whether ``__init__`` sets each concrete field's value by storing it in the instance's
    ``__dict__`` (Django's own deferred attributes; not a file field's descriptor)."""
    if model.__init__ is not Model.__init__ \
            or model.from_db.__func__ is not Model.from_db.__func__:  # type: ignore[attr-defined]
        return False
    return all(type(model.__dict__.get(field.attname, None)) in _PLAIN_DESCRIPTORS
               or field.attname not in model.__dict__
               for field in model._meta.concrete_fields)


_PLAIN_DESCRIPTORS = (DeferredAttribute, ForeignKeyDeferredAttribute)


def _joined(alias: str, *models: tuple[type[Model], str],
            leave_out: frozenset[str] = frozenset()) -> _Joined:
    """The SELECT's columns and readers of ``models`` (each with its alias in the statement);
    ``leave_out``: fields ("Model.attname") left deferred, read from the database only if used."""
    connection = connections[alias]
    columns: list[str] = []
    readers: list[_Reader] = []
    for model, short in models:
        fields = [field for field in model._meta.concrete_fields
                  if f"{model.__name__}.{field.attname}" not in leave_out]
        start = len(columns)
        converters: list[_Converters] = []
        for offset, field in enumerate(fields):
            col = field.get_col(model._meta.db_table)
            functions = connection.ops.get_db_converters(col) + field.get_db_converters(connection)
            if functions:
                converters.append((start + offset, tuple(functions), col))
        # A concrete field always has a column.
        columns += [f"{short}.{connection.ops.quote_name(cast(str, field.column))}"
                    for field in fields]
        readers.append((model, [f.attname for f in fields], start, len(columns), tuple(converters)))
    return _Joined(alias, ", ".join(columns), tuple(readers))


def _table(model: type[Model]) -> str:
    return model._meta.db_table


@cache
def _link_query(alias: str) -> tuple[str, _Joined]:
    joined = _joined(alias, (Participant, "p"), (Study, "s"))
    # Identifiers come from the models; values are bound parameters.
    sql = (
        f"SELECT {joined.columns} FROM {_table(Participant)} p "  # noqa: S608
        f"JOIN {_table(Study)} s ON s.id = p.study_id WHERE p.token = %s"
    )
    return sql, joined


# The questions of a study that is no longer a draft, per process. They cannot change once a
# study has been opened (`studies.services.study_update` refuses it; a draft's questions
# are replaced, with new ids, and a study never goes back to draft), so every answer of an open
# study need not fetch its questions and decode their scales again: before this cache they were a
# third of finding the participant, the largest share of a worker's time per answer (a profile of
# bench.load, docs/benchmarks.md). Keyed by the study's id and creation time (SQLite reuses the
# ids of deleted rows); a question saved or deleted in this process (the admin, a test) forgets
# its study. Each request gets its own instances, built from the stored field values without
# decoding anything: the values are shared and only ever read.
QUESTIONS_CACHED = 512  # studies per process
_questions: OrderedDict[tuple[str, int, datetime], tuple[dict[str, Any], ...]] = OrderedDict()
_questions_lock = threading.Lock()


def _question_copy(fields: dict[str, Any], study: Study, alias: str) -> Question:
    question = Question.__new__(Question)
    question.__dict__.update(fields)
    question._state = ModelState()
    question._state.adding = False
    question._state.db = alias
    Question.study.field.set_cached_value(question, study)
    return question


def study_questions(*, study: Study, alias: str) -> list[Question]:
    """Return the questions of ``study`` in order, from this process's cache unless the study
    is a draft (one query when they are not cached)."""
    key = (alias, study.pk, study.created_at)
    cached = _questions.get(key)
    if cached is None or study.status == Study.Status.DRAFT:
        names = [field.attname for field in Question._meta.concrete_fields]
        cached = tuple({name: getattr(question, name) for name in names}
                       for question in Question.objects.using(alias)
                       .filter(study_id=study.pk).order_by("position"))
        if study.status != Study.Status.DRAFT:
            with _questions_lock:
                _questions[key] = cached
                while len(_questions) > QUESTIONS_CACHED:
                    _questions.popitem(last=False)
    return [_question_copy(fields, study, alias) for fields in cached]


def questions_forget(*, study_id: int) -> None:
    """Drop a study's cached questions in this process (a question of it was saved or deleted)."""
    with _questions_lock:
        for key in [key for key in _questions if key[1] == study_id]:
            del _questions[key]


@cache
def _next_query(alias: str) -> tuple[str, _Joined]:
    joined = _joined(alias, (Assignment, "a"), (Item, "i"))
    sql = (
        f"SELECT {joined.columns} FROM {_table(Assignment)} a "  # noqa: S608
        f"JOIN {_table(Item)} i ON i.id = a.item_id "
        f"WHERE a.participant_id = %s AND NOT EXISTS "
        f"(SELECT 1 FROM {_table(Response)} r WHERE r.assignment_id = a.id) "
        f"ORDER BY a.position LIMIT 1"
    )
    return sql, joined


# What an answer never reads of its study: the texts of its pages and the analysis's settings
# (issue 26). An answer's link query leaves them deferred: the database does not read them (a
# page of markdown each, TOASTed when long) and the worker does not decode them. Anything that
# does use one reads it from the database then, as Django's deferred fields do.
ANSWER_DEFERS = frozenset({"Study.consent_text", "Study.instructions", "Study.completion_text",
                           "Study.analysis_settings"})


@cache
def _answer_link_query(alias: str) -> tuple[str, _Joined]:
    joined = _joined(alias, (Participant, "p"), (Study, "s"), leave_out=ANSWER_DEFERS)
    sql = (
        f"SELECT {joined.columns} FROM {_table(Participant)} p "  # noqa: S608
        f"JOIN {_table(Study)} s ON s.id = p.study_id WHERE p.token = %s"
    )
    return sql, joined


def participant_by_token(*, token: str, answer: bool = False) -> Participant:
    """Return the participant of a link with its study (one query) and the study's questions
    (cached, see `study_questions`), or 404. The questions are in
    ``participant.study.question_list``. For an ``answer``, the study's `ANSWER_DEFERS` are
    deferred (read if used)."""
    alias = router.db_for_read(Participant)
    sql, joined = (_answer_link_query if answer else _link_query)(alias)
    with hot_cursor(alias) as cursor:
        cursor.execute(sql, [token])
        row = cursor.fetchone()
    if row is None:
        raise Http404("No such link")
    # The link query's models, in its order (a list at runtime).
    participant, study = cast("tuple[Participant, Study]", joined.instances(row))
    Participant.study.field.set_cached_value(participant, study)
    study.__dict__["question_list"] = study_questions(study=study, alias=alias)  # cached_property
    return participant


def next_assignment(*, participant: Participant) -> Assignment | None:
    """Return the first presentation without a stored answer (resume point) and its item, or None."""
    alias = router.db_for_read(Assignment)
    sql, joined = _next_query(alias)
    with hot_cursor(alias) as cursor:
        cursor.execute(sql, [participant.pk])
        row = cursor.fetchone()
    if row is None:
        return None
    # The resume query's models, in its order (a list at runtime).
    assignment, item = cast("tuple[Assignment, Item]", joined.instances(row))
    Assignment.item.field.set_cached_value(assignment, item)
    Assignment.participant.field.set_cached_value(assignment, participant)
    return assignment


def assignment_at(*, participant: Participant, position: int) -> Assignment | None:
    """Return the participant's presentation at ``position`` with its item, or None."""
    return (Assignment.objects.select_related("item")
            .filter(participant=participant, position=position).first())


def current_answers(*, participant: Participant,
                    assignment: Assignment) -> dict[str, dict[str, Any]] | None:
    """Return the current answers of a presentation as ``{question key: {value, missing,
    comment, choice}}`` (``choice`` a comparative question's judgment, else None), or None when
    it has no answer yet. One query."""
    from .models import Answer

    rows = list(Answer.objects.filter(
        response__participant=participant, response__item_id=assignment.item_id,
        response__presentation=assignment.presentation, response__is_current=True)
        .values_list("question__key", "value", "missing", "comment", "choice"))
    if not rows:
        return None
    return {key: {"value": value, "missing": missing, "comment": comment, "choice": choice}
            for key, value, missing, comment, choice in rows}


# The answer path of a study with a comparative question needs the item's outputs (which
# questions are asked, and the judgment's check): one prepared statement, not an ORM query
# (whose compiling cost a third of a pairwise answer's CPU under bench.load --kind pairwise).
_OUTPUTS_SQL = (
    f"SELECT i.outputs FROM {Item._meta.db_table} i "  # noqa: S608 - names from the models
    f"JOIN {Assignment._meta.db_table} a ON a.item_id = i.id "
    "WHERE a.participant_id = %s AND a.position = %s"
)


def outputs_at(*, participant: Participant, position: int) -> list[str]:
    """Return the outputs of the item at ``position`` of the participant's assignment (empty for
    an item that is no comparison, or no such position): one query."""
    alias = router.db_for_read(Item)
    with hot_cursor(alias) as cursor:
        cursor.execute(_OUTPUTS_SQL, [participant.pk, position])
        row = cursor.fetchone()
    if row is None or row[0] is None:
        return []
    outputs = json.loads(row[0]) if isinstance(row[0], (str, bytes)) else row[0]
    return [str(name) for name in outputs] if isinstance(outputs, list) else []


@dataclass(frozen=True)
class Output:
    """One output of a comparison as the item page shows it: its external id, its letter in
    the order shown (A, B, …) and its text."""

    external_id: str
    letter: str
    text: str


def comparison_outputs(*, item: Item, key: str) -> list[Output]:
    """Return a comparison's outputs in the order one participant sees them
    (`core.comparative.shown_order` keyed by ``key``), with their texts: one query."""
    order = shown_order(item.outputs, key)
    texts = dict(Item.objects.filter(study_id=item.study_id, external_id__in=order)
                 .values_list("external_id", "text"))
    return [Output(name, _letter(n), texts.get(name, "")) for n, name in enumerate(order)]


def _letter(n: int) -> str:
    return chr(ord("A") + n) if n < 26 else str(n + 1)


def revisable(*, assignment: Assignment) -> bool:
    """Whether an answer at this presentation may still be changed.

    Once an item's repeat has been shown, its first presentation can no longer be revised:
    going back to it would let the annotator compare their two answers (until the repeat is
    shown, going back reveals nothing, so it stays open).

    A screening or check item is revisable like any other: locking it would show the annotator
    which items are checks. Its answer is still final where it counts: the check was scored, and
    the screening is decided, on the first revision (``check_score``, ``screening_decide``); a
    later revision is stored, as the annotator gave it, and changes no score.
    """
    return not (assignment.presentation == 1 and Assignment.objects.filter(
        participant_id=assignment.participant_id, item_id=assignment.item_id,
        presentation__gt=1, shown_at__isnull=False).exists())


# The duration an instructions page announces: the median active time of the study's first
# answers to main items once there are enough of them, else a default per display (per question).
ESTIMATE_MIN_ANSWERS = 20
ESTIMATE_SAMPLE = 1000


def study_item_seconds(*, study: Study) -> float:
    """Return the expected active seconds per item of a study.

    The median active time of the first answers (revision 1) to main items collected in
    Concord, over the study's most recent 1 000, once there are at least 20; before that the
    display's default (``CONCORD_ITEM_SECONDS``: text 20 s, pair 15 s, coref 45 s) times the
    number of questions. Screening and check items are left out of the median: a few known
    answers, often short, would make the whole study look quicker than it is. One query.
    """
    # Not null, by the filter.
    times = cast("list[int]", list(Response.objects.filter(
        participant__study_id=study.pk, revision=1, source=Response.Source.APP,
        item__role=Item.Role.MAIN, active_ms__isnull=False)
        .order_by("-id").values_list("active_ms", flat=True)[:ESTIMATE_SAMPLE]))
    if len(times) >= ESTIMATE_MIN_ANSWERS:
        return median(times) / 1000
    per_question = settings.CONCORD_ITEM_SECONDS.get(study.display, 20)
    return per_question * max(1, len(study.question_list))


def _main_presentations_to_come(participant: Participant) -> int:
    """The main presentations a participant still in screening will get if they pass: the design's
    items (``items_per_participant``, 0 = every main item), their repeats and the checks. Until
    the screening is decided only the screening items are assigned (`participant_assign`), so
    ``n_assigned`` alone would announce a 19-item study as the one screening item's minute."""
    study = participant.study
    roles = dict(Item.objects.filter(study_id=study.pk).order_by().values("role")
                 .annotate(n=Count("id")).values_list("role", "n"))
    main = roles.get(Item.Role.MAIN, 0)
    items = min(study.items_per_participant, main) if study.items_per_participant else main
    return items + min(study.duplicates_per_participant, items) + roles.get(Item.Role.CHECK, 0)


def participant_minutes_left(*, participant: Participant) -> int:
    """Return about how many minutes the participant's remaining items take (at least 1): every
    presentation assigned and not answered yet, and, while the screening is pending, the main
    ones that follow it."""
    left = max(0, participant.n_assigned - participant.n_answered)
    if participant.screening == Participant.Screening.PENDING:
        left += _main_presentations_to_come(participant)
    seconds = left * study_item_seconds(study=participant.study)
    return max(1, math.ceil(seconds / 60))


def study_full(*, study: Study) -> bool:
    """Whether every item of the study has its k answers (``annotators_per_item``): a first
    presentation answered by k participants (main items only). One aggregate query. The open
    link refuses newcomers a little earlier, once every place is taken by an answer or by a
    participant at work (`studies.services.study_has_room`)."""
    from django.db.models import Count, Q

    main = Item.objects.filter(study=study, role=Item.Role.MAIN)  # checks are answered by all
    short = (main.annotate(n=Count("responses", filter=Q(responses__presentation=1,
                                                         responses__is_current=True)))
             .filter(n__lt=study.annotators_per_item))
    return main.exists() and not short.exists()


def event_list(raw: Any) -> list[Any]:
    """A response's stored events as a list (a raw query gives SQLite's text, PostgreSQL's list);
    anything that is not a list of [kind, ms] pairs reads as none."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return []
    if not isinstance(raw, list):
        return []
    return [e for e in raw if isinstance(e, list) and len(e) == 2]
