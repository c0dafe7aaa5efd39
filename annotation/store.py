"""The one writer of answers stored in bulk: participants, their responses and answers,
pseudonyms, progress counters and attention checks, for every path that stores answers it did
not collect one at a time (an imported response file, a replayed methods bundle, the demo
studies).

No other app creates a `Response` or an `Answer` (tests/annotation/test_store.py holds them to
it). Three paths write these rows, all in this app, chosen by the size of what arrives:

- one answer from the questionnaire: `services.response_submit`, one statement per answer;
- a list of annotators held in memory (a wide or small file, a bundle, the demo): `responses_store`
  here, with `bulk_create`;
- a long response file on PostgreSQL: `bulk.responses_import_copy`, streamed with COPY and stored
  set-based from its staging table (it makes its participants and pseudonyms with the helpers
  below, so the rules stay the same).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from core.bundles import ParticipantState
from core.comparative import asks
from core.responses import Cell
from core.screening import item_correct
from studies.models import Item, Participant, Question, Study
from studies.services import pseudonyms_assign

from .models import Answer, Response

BATCH = 2000
# A question a stored response leaves out is "not answered", as the questionnaire stores an
# optional question left blank.
SKIPPED = Cell(None, Answer.Missing.SKIPPED)


@dataclass(frozen=True)
class ResponseRow:
    """One response to store: one revision of a presentation, its answers by question key.

    ``annotator`` is the index of its annotator in the list given to `responses_store`.
    """

    annotator: int
    item_id: int
    presentation: int
    position: int | None
    cells: Mapping[str, Cell]
    revision: int = 1
    current: bool = True
    active_ms: int | None = None
    source: str = Response.Source.IMPORT
    assignment_id: int | None = None
    events: Sequence[Any] = ()


@dataclass(frozen=True)
class AnnotatorRow:
    """One annotator whose responses are stored: a new imported participant named
    ``external_id``, or ``participant``, an invited one who has not answered yet (the demo's).

    ``presented`` counts the presentations they were shown (their ``n_assigned``; a new
    participant's default: those answered). ``pseudonym_number`` keeps a pseudonym given
    elsewhere (a bundle's A7 stays A7); without it, an annotator with a response gets the
    study's next one, in the order of the list.
    """

    external_id: str = ""
    participant: Participant | None = None
    meta: Mapping[str, str] = field(default_factory=dict)
    presented: int | None = None
    pseudonym_number: int | None = None
    # The state recorded where the responses come from (a bundle's participants.csv): replaces
    # "done now" (and any stop the checks would give) with when they finished, were stopped or
    # revoked, and their screening.
    recorded: ParticipantState | None = None


@dataclass(frozen=True)
class Stored:
    """What `responses_store` wrote."""

    participants: int
    presentations: int
    responses: int
    answers: int


@dataclass
class _Progress:
    answered: int = 0
    checks_answered: int = 0
    checks_failed: int = 0
    stopped: bool = False


@transaction.atomic
def responses_store(
    *,
    study: Study,
    annotators: Sequence[AnnotatorRow],
    responses: Sequence[ResponseRow],
    label: str = "",
    consented: bool = False,
    checks_scored: bool = False,
    now: datetime | None = None,
) -> Stored:
    """Store ``annotators`` and their ``responses`` (in this order: response ids follow it, and
    the analysis reads presentations in the order of their first revision), one answer per
    question of the study for each response.

    A new participant gets source "import" and ``label``; every participant is counted done
    (``n_answered``: the presentations answered; ``completed_at``: now, an imported submission
    is final) unless its row carries a ``recorded`` state, which it then takes and, with ``consented``, consented now. With ``checks_scored`` the attention
    checks are scored on each presentation's first revision, as the questionnaire scores them,
    and the failure that reaches the study's ``check_stop_after`` stops the participant.
    Pseudonyms: see `AnnotatorRow`.
    """
    now = now or timezone.now()
    progress = _progress(study=study, annotators=annotators, responses=responses,
                         checks_scored=checks_scored)
    ids = _participants(study=study, annotators=annotators, progress=progress, label=label,
                        consented=consented, now=now)
    created = Response.objects.bulk_create(
        (Response(participant_id=ids[r.annotator], item_id=r.item_id,
                  presentation=r.presentation, assignment_id=r.assignment_id,
                  position=r.position, revision=r.revision, is_current=r.current,
                  active_ms=r.active_ms, events=list(r.events), source=r.source)
         for r in responses),
        batch_size=BATCH)
    asked = _asked(study=study)
    answers = Answer.objects.bulk_create(
        (Answer(response_id=response.pk, question=q, value=cell.value,
                missing=cell.missing or ("" if cell.value is not None else SKIPPED.missing),
                comment=cell.comment, choice=cell.choice)
         for response, row in zip(created, responses, strict=True)
         for q in asked(row.item_id) for cell in (row.cells.get(q.key, SKIPPED),)),
        batch_size=BATCH)
    pseudonyms_give(study=study, named=[a.pseudonym_number for a in annotators],
                    ids=[ids[n] for n, (a, p) in enumerate(zip(annotators, progress, strict=True))
                         if p.answered and a.pseudonym_number is None])
    return Stored(participants=len(annotators),
                  presentations=sum(p.answered for p in progress),
                  responses=len(created), answers=len(answers))


def _asked(*, study: Study) -> Callable[[int], list[Question]]:
    """The questions asked about an item, by its id (`Question.applies_to`): the comparative
    ones about a comparison of a size they judge, the scale ones about every other item. One query, and only for a
    study with a comparative question."""
    questions = study.question_list
    if not any(q.is_comparative for q in questions):
        return lambda item_id: questions
    sizes = {pk: len(outputs) for pk, outputs
             in study.items.exclude(outputs=[]).values_list("pk", "outputs")}
    asked = {n: [q for q in questions if asks(q.kind, n)] for n in {0, *sizes.values()}}
    return lambda item_id: asked[sizes.get(item_id, 0)]


def _progress(*, study: Study, annotators: Sequence[AnnotatorRow],
              responses: Sequence[ResponseRow], checks_scored: bool) -> list[_Progress]:
    """Per annotator: presentations answered and, when scored, the attention checks."""
    progress = [_Progress() for _ in annotators]
    checks = _checks(study) if checks_scored else {}
    seen: set[tuple[int, int, int]] = set()
    for row in responses:
        key = (row.annotator, row.item_id, row.presentation)
        if key in seen:
            continue  # a later revision: answered and scored already
        seen.add(key)
        mine = progress[row.annotator]
        mine.answered += 1
        if row.item_id in checks:
            gold, tolerance = checks[row.item_id]
            right = item_correct(gold, tolerance, {k: c.value for k, c in row.cells.items()})
            mine.checks_answered += 1
            mine.checks_failed += not right
            mine.stopped = bool(study.check_stop_after) and \
                mine.checks_failed >= study.check_stop_after
    return progress


def _checks(study: Study) -> dict[int, tuple[Any, Any]]:
    """The study's attention checks: item id → (gold, tolerance)."""
    return {pk: (gold, tolerance) for pk, gold, tolerance in
            study.items.filter(role=Item.Role.CHECK).values_list("pk", "gold", "tolerance")}


def _participants(*, study: Study, annotators: Sequence[AnnotatorRow],
                  progress: Sequence[_Progress], label: str, consented: bool,
                  now: datetime) -> list[int]:
    """Create the new participants and count the invited ones; return every participant's id,
    in the order of ``annotators``."""
    def counted(participant: Participant, mine: _Progress) -> Participant:
        participant.n_answered = mine.answered
        participant.consented_at = now if consented else participant.consented_at
        participant.completed_at = None if mine.stopped else now
        participant.stopped_at = now if mine.stopped else participant.stopped_at
        participant.checks_answered = mine.checks_answered
        participant.checks_failed = mine.checks_failed
        return participant

    def replayed(participant: Participant, state: ParticipantState | None) -> Participant:
        if state is not None:
            participant.completed_at = state.completed_at
            participant.stopped_at = state.stopped_at
            participant.revoked_at = state.revoked_at
            participant.screening = state.screening
        return participant

    new = [replayed(counted(Participant(
               study=study, source=Participant.Source.IMPORT, external_id=a.external_id,
               label=label[:200], meta=dict(a.meta), pseudonym_number=a.pseudonym_number,
               n_assigned=mine.answered if a.presented is None else a.presented), mine),
               a.recorded)
           for a, mine in zip(annotators, progress, strict=True) if a.participant is None]
    invited = [counted(a.participant, mine)
               for a, mine in zip(annotators, progress, strict=True) if a.participant is not None]
    participants_create(participants=new)
    Participant.objects.bulk_update(invited, ["n_answered", "consented_at", "completed_at",
                                              "stopped_at", "checks_answered", "checks_failed"],
                                    batch_size=BATCH)
    ids = participant_ids(study=study, external_ids=[p.external_id for p in new])
    return [ids[a.external_id] if a.participant is None else a.participant.pk
            for a in annotators]


def participants_create(*, participants: Sequence[Participant]) -> None:
    """Insert new imported participants (one multi-row INSERT per batch)."""
    Participant.objects.bulk_create(participants, batch_size=BATCH)


def participant_ids(*, study: Study, external_ids: Sequence[str]) -> dict[str, int]:
    """The ids of the study's imported participants named ``external_ids``."""
    return dict(Participant.objects.filter(
        study=study, source=Participant.Source.IMPORT, external_id__in=external_ids,
    ).values_list("external_id", "id"))


def pseudonyms_give(*, study: Study, named: Sequence[int | None], ids: Sequence[int]) -> None:
    """Give pseudonyms after a store: the study's counter moves past the numbers kept from
    elsewhere (``named``), and the participants ``ids`` (those with an answer, in order) that
    have none get the next ones (`studies.services.pseudonyms_assign`)."""
    kept = max((n for n in named if n is not None), default=None)
    if kept is not None:
        Study.objects.filter(pk=study.pk, pseudonyms_issued__lt=kept).update(
            pseudonyms_issued=kept)
    if ids:
        pseudonyms_assign(study_id=study.pk, participant_ids=ids)
