"""Participants: invited or enrolled by the open link, assigned their presentations, screened,
given pseudonyms, excluded from the analysis, revoked and deleted."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import connections, models, router, transaction
from django.db.models import Case, Count, Min, Q, Value, When
from django.utils import timezone

from core.design import checks_place, participant_seed, plan_presentations
from core.problems import InputError, Problem
from core.screening import item_correct, screening_passed
from core.settings import AnalysisSettings

from ..models import Assignment, Item, Participant, Question, Study
from .creation import study_design
from .lifecycle import study_event, study_writable


@transaction.atomic
def participant_assign(*, participant: Participant) -> int:
    """Build and record the participant's ordered presentations (once).

    A study with screening items assigns those first (in the items' order) and nothing else:
    the main presentations follow only once the screening is passed (`screening_decide`).
    The study row is locked so that concurrent enrolments see each other's counts and the
    overlap stays balanced.
    """
    study = Study.objects.select_for_update().get(pk=participant.study_id)
    if participant.assignments.exists():
        return participant.n_assigned
    screening = list(study.items.filter(role=Item.Role.SCREENING).order_by("position")
                     .values_list("id", flat=True))
    if screening:
        Assignment.objects.bulk_create(
            Assignment(participant=participant, item_id=item, position=pos)
            for pos, item in enumerate(screening))
        participant.n_assigned = len(screening)
        participant.screening = Participant.Screening.PENDING
        participant.screening_total = len(screening)
        participant.save(update_fields=["n_assigned", "screening", "screening_total"])
        return len(screening)
    return _main_assign(study, participant, offset=0)


def overlap_counts(*, study: Study, consented_only: bool = False) -> dict[int, int]:
    """Return each main item's places taken: first presentations of participants still at work,
    plus the answers of those whose unanswered assignments were reclaimed (annotation.services.
    participants_reclaim). ``consented_only``: count the assignments of participants who gave
    consent only (an invitation link nobody opened yet takes no place from the open link). Two
    aggregate queries (the reverse relation "responses" is the annotation app's)."""
    at_work = Q(assignments__presentation=1, assignments__participant__reclaimed_at=None)
    if consented_only:
        at_work &= Q(assignments__participant__consented_at__isnull=False)
    counts = dict(
        Item.objects.filter(study=study, role=Item.Role.MAIN)
        .annotate(n=Count("assignments", filter=at_work))
        .values_list("id", "n")
    )
    if study.participants.filter(reclaimed_at__isnull=False).exists():
        answered = (Item.objects.filter(study=study, role=Item.Role.MAIN)
                    .annotate(n=Count("responses", filter=Q(
                        responses__presentation=1, responses__is_current=True,
                        responses__participant__reclaimed_at__isnull=False)))
                    .filter(n__gt=0).values_list("id", "n"))
        for item, n in answered:
            counts[item] = counts.get(item, 0) + n
    return counts


def study_has_room(*, study: Study) -> bool:
    """Whether a new participant of the open link would take a place some main item still needs.

    An item's places taken are the larger of its `overlap_counts` among participants who gave
    consent (an invitation link nobody has opened yet holds no place) and its current answers to
    a first presentation (imported responses included, which have no assignment); the study has
    room while some main item has fewer than k (``annotators_per_item``). Answers only turn a place taken into a place answered, so under
    the study row's lock (`participant_enrol`) the answer is exact: two people consenting at
    once for the last place cannot both get it. Three aggregate queries at most.
    """
    k = study.annotators_per_item
    taken = overlap_counts(study=study, consented_only=True)
    if not taken:
        return False
    if all(n >= k for n in taken.values()):
        return False
    answered = dict(Item.objects.filter(study=study, role=Item.Role.MAIN)
                    .annotate(n=Count("responses", filter=Q(responses__presentation=1,
                                                            responses__is_current=True)))
                    .values_list("id", "n"))
    return any(max(n, answered.get(item, 0)) < k for item, n in taken.items())


class StudyFull(Exception):
    """Every main item has its k places taken: the open link enrols nobody more."""


def _main_assign(study: Study, participant: Participant, *, offset: int) -> int:
    """Record the main presentations after the first ``offset`` positions (study row locked),
    with the study's attention checks among them: each at its ``check_at`` place among the main
    presentations (1 = first) or, without one, at a seeded random place."""
    plan = _MainPlan(study)
    Assignment.objects.bulk_create(
        Assignment(participant=participant, item_id=item, position=position, presentation=pres)
        for _, item, position, pres in plan.assign(participant, offset=offset))
    participant.save(update_fields=["order_seed", "n_assigned", "check_positions"])
    return participant.n_assigned


class _MainPlan:
    """The study's main items (with their systems and sources), places taken and attention
    checks, read once (three queries),
    then each participant's presentations planned from them in memory.

    Planning several participants in a row adds each one's first presentations to the places
    taken, exactly what `overlap_counts` would read back after each was stored (a new
    participant is not reclaimed), so a batch gets the presentations one-by-one calls give.
    """

    def __init__(self, study: Study) -> None:
        self.study = study
        rows = list(study.items.filter(role=Item.Role.MAIN)
                    .values_list("id", "is_control", "system", "source"))
        self.items = [(pk, control) for pk, control, _, _ in rows]
        # Systems and sources (docs/systems.md): only those named, so that a study without them
        # is planned with exactly the draws it always had.
        self.systems = {pk: system for pk, _, system, _ in rows if system}
        self.sources = {pk: source for pk, _, _, source in rows if source}
        self.counts = overlap_counts(study=study)
        self.checks = list(study.items.filter(role=Item.Role.CHECK).order_by("position")
                           .values_list("id", "check_at"))
        self.design = study_design(study)

    def assign(self, participant: Participant, *,
               offset: int) -> list[tuple[int, int, int, int]]:
        """Plan the participant's presentations; set its order seed, count and check positions
        (not saved) and return its assignments as (participant, item, position, presentation)
        rows."""
        seed = participant_seed(self.study.seed, participant.pk)
        plan = plan_presentations(
            [i for i, _ in self.items],
            design=self.design,
            seed=seed,
            assigned_counts=self.counts,
            control_ids=frozenset(i for i, control in self.items if control),
            systems=self.systems,
            sources=self.sources,
        )
        full, check_positions = checks_place(plan, self.checks, seed=seed)
        for item, presentation in plan:
            if presentation == 1:
                self.counts[item] = self.counts.get(item, 0) + 1
        participant.order_seed = seed
        participant.n_assigned = offset + len(full)
        participant.check_positions = [offset + p for p in check_positions]
        return [(participant.pk, item, offset + pos, pres) for pos, (item, pres) in enumerate(full)]


def screening_decide(*, participant: Participant) -> str:
    """Decide a participant's screening once every screening item is answered; return the
    participant's screening state ("pending" while items are left).

    Passed: the main presentations are assigned after the screening ones (and the participant
    is no longer complete). Failed: nothing more is assigned; the participant is not complete
    (the done page shows the screened-out page instead). Idempotent and locked, so two requests
    finishing at once decide once.
    """
    with transaction.atomic():
        study = Study.objects.select_for_update().get(pk=participant.study_id)
        row = Participant.objects.select_for_update().get(pk=participant.pk)
        if row.screening != Participant.Screening.PENDING:
            _copy_screening(participant, row)
            return row.screening
        items = {pk: (gold, tolerance) for pk, gold, tolerance in Item.objects.filter(
            assignments__participant=row, role=Item.Role.SCREENING)
            .values_list("pk", "gold", "tolerance")}
        answers: dict[int, dict[str, float | None]] = {}
        # The answers through the questions' reverse relation: this app imports no other app.
        # The first revision's: a screening answer is final, whatever the annotator changes
        # when going back (the page lets them, so as not to set screening items apart).
        for item, key, value in Question.objects.filter(
                answers__response__participant=row, answers__response__revision=1,
                answers__response__item_id__in=list(items)).values_list(
                    "answers__response__item_id", "key", "answers__value"):
            answers.setdefault(item, {})[key] = value
        if len(answers) < len(items):
            return row.screening
        correct = sum(item_correct(gold, tolerance, answers[pk])
                      for pk, (gold, tolerance) in items.items())
        passed = screening_passed(correct, len(items), pass_share=study.screening_pass_share,
                                  pass_count=study.screening_pass_count)
        row.screening = (Participant.Screening.PASSED if passed
                         else Participant.Screening.FAILED)
        row.screening_correct = correct
        row.screening_total = len(items)
        row.completed_at = None
        row.save(update_fields=["screening", "screening_correct", "screening_total",
                                "completed_at"])
        if passed:
            _main_assign(study, row, offset=len(items))
            participant.check_positions = row.check_positions
        _copy_screening(participant, row)
        return row.screening


def _copy_screening(participant: Participant, row: Participant) -> None:
    for name in ("screening", "screening_correct", "screening_total", "completed_at",
                 "n_assigned", "n_answered", "order_seed"):
        setattr(participant, name, getattr(row, name))


@transaction.atomic
@transaction.atomic
def participants_invite(*, study: Study, count: int, label: str = "",
                        user: User | None = None) -> list[Participant]:
    """Create `count` participants with their own single-person links and assignments.

    All or none: a study whose design cannot be built (no items yet) leaves no participant.
    Set-based: the participants, then all their assignments, each in one bulk statement, planned
    in memory under the study row's lock (`_MainPlan`), so 1 000 links take one request's time,
    not one transaction each.
    """
    study_writable(study)
    if not 1 <= count <= 1000:
        raise ValueError("invite between 1 and 1000 participants at a time")
    locked = Study.objects.select_for_update().get(pk=study.pk)
    created = Participant.objects.bulk_create(
        Participant(study=study, source=Participant.Source.INVITE, label=label)
        for _ in range(count))
    screening = list(locked.items.filter(role=Item.Role.SCREENING).order_by("position")
                     .values_list("id", flat=True))
    rows: list[tuple[int, int, int, int]] = []
    if screening:
        for participant in created:
            rows += [(participant.pk, item, pos, 1) for pos, item in enumerate(screening)]
            participant.n_assigned = len(screening)
            participant.screening = Participant.Screening.PENDING
            participant.screening_total = len(screening)
        fields = ["n_assigned", "screening", "screening_total"]
    else:
        plan = _MainPlan(locked)
        for participant in created:
            rows += plan.assign(participant, offset=0)
        fields = ["order_seed", "n_assigned", "check_positions"]
    _rows_store(created, fields, rows)
    study_event(study=study, user=user, action="invite", count=count,
                **({"label": label[:100]} if label else {}))
    return created


def _rows_store(participants: list[Participant], fields: list[str],
                rows: list[tuple[int, int, int, int]]) -> None:
    """Insert the assignment rows and set the participants' planned fields: two executemany
    statements (pipelined by psycopg), no model instance per row."""
    def field(model: type[models.Model], name: str) -> models.Field[Any, Any]:
        found = model._meta.get_field(name)
        assert isinstance(found, models.Field) and found.column  # a column, not a relation
        return found

    connection = connections[router.db_for_write(Assignment)]
    table = connection.ops.quote_name(Assignment._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(str(field(Assignment, name).column))
                        for name in ("participant", "item", "position", "presentation"))
    model_fields = [field(Participant, name) for name in fields]
    sets = ", ".join(f"{connection.ops.quote_name(str(f.column))} = %s" for f in model_fields)
    updates = [[f.get_db_prep_save(getattr(p, f.attname), connection) for f in model_fields]
               + [p.pk] for p in participants]
    with connection.cursor() as cursor:
        cursor.executemany(f"INSERT INTO {table} ({columns}) VALUES (%s, %s, %s, %s)",  # noqa: S608 - names from the models
                           rows)
        cursor.executemany(
            f"UPDATE {connection.ops.quote_name(Participant._meta.db_table)} SET {sets} "  # noqa: S608
            "WHERE id = %s", updates)


def participant_enrol(*, study: Study, source: str, external_id: str, meta: dict[str, Any],
                      consented: bool = False) -> Participant:
    """Return the participant of a platform id on the study's open link, creating it once.

    The open link calls it only from the consent form's POST (``consented``): merely opening
    the link (a chat app's link preview) creates no participant, so the completion rate counts
    consenting people only.

    A new participant is created only while the study has room (`study_has_room`), checked and
    assigned under the study row's lock in one transaction, so that concurrent enrolments for
    the last places are serialised: the one that comes too late gets `StudyFull`, and nothing
    of it is stored. Someone already enrolled always gets their participant back.
    """
    now = timezone.now() if consented else None
    existing = Participant.objects.filter(study=study, source=source,
                                          external_id=external_id).first()
    if existing is None:
        with transaction.atomic():
            locked = Study.objects.select_for_update().get(pk=study.pk)
            participant, created = Participant.objects.get_or_create(
                study=study, source=source, external_id=external_id,
                defaults={"meta": meta, "consented_at": now})
            if created:
                if not study_has_room(study=locked):
                    raise StudyFull(study.slug)  # rolls the new participant back
                participant_assign(participant=participant)
                participant.refresh_from_db()
    else:
        participant = existing
    if now is not None and participant.consented_at is None:
        participant_consent(participant=participant)
    if not participant.n_assigned:
        participant_assign(participant=participant)
        participant.refresh_from_db()
    return participant


def participant_consent(*, participant: Participant) -> None:
    if participant.consented_at is None:
        participant.consented_at = timezone.now()
        participant.save(update_fields=["consented_at"])


def participant_revoke(*, participant: Participant, user: User | None = None) -> None:
    """Revoke a participant's link: it then shows a polite "no longer valid" page and takes no
    answer; the answers given before stay (and count) unless they are excluded. Recorded."""
    if participant.revoked_at is not None:
        raise InputError([Problem(str(participant.pk), None, None, "this link is already revoked")])
    study_writable(participant.study)
    participant.revoked_at = timezone.now()
    participant.save(update_fields=["revoked_at"])
    study_event(study=participant.study, user=user, action="revoke", participant=participant.pk)


@transaction.atomic
def participant_delete(*, participant: Participant,
                       user: User | None = None) -> dict[str, Any]:
    """Delete a participant with every answer they gave (withdrawal of consent).

    Gone with them: their responses and answers, assignments, and their pseudonym from the
    study's ``excluded_annotators``; the pseudonym itself is not given again (a gap stays, and
    nobody else is renumbered). Every analysis run and export of the study that was not finished
    before their first answer may contain their answers, so it is deleted with its stored results
    (the export files once this commits); earlier ones cannot, and stay. The audit entry records
    the pseudonym and the counts, never the answers nor the platform id. Returns the counts.
    """
    study = Study.objects.select_for_update().get(pk=participant.study_id)
    study_writable(study, "changed (unarchive it to delete a participant)")
    participant = Participant.objects.get(pk=participant.pk)  # its pseudonym as stored now
    # Reverse relations only: the apps above studies (annotation, analysis, exports) own these.
    given = participant.responses.aggregate(first=Min("received_at"), responses=Count("id", distinct=True),
                                            answers=Count("answers"))
    counts: dict[str, Any] = {"pseudonym": participant.pseudonym,
                              "responses": given["responses"], "answers": given["answers"],
                              "analysis_runs": 0, "exports": 0}
    root = Path(settings.EXPORTS_DIR).resolve()
    files: list[Path] = []
    if given["first"] is not None:
        stale = Q(finished_at__isnull=True) | Q(finished_at__gte=given["first"])
        runs = study.analysis_runs.filter(stale)
        exports = study.export_jobs.filter(stale)
        files = [(root / path).resolve() for path in exports.exclude(path="")
                 .values_list("path", flat=True)]
        counts["analysis_runs"], counts["exports"] = runs.count(), exports.count()
        runs.delete()
        exports.delete()
    analysis = study.analysis
    if participant.pseudonym in analysis.excluded_annotators:
        study.analysis = AnalysisSettings.from_mapping({"excluded_annotators": [
            name for name in analysis.excluded_annotators if name != participant.pseudonym]},
            base=analysis)
        study.save(update_fields=["analysis_settings"])
    Participant.objects.filter(pk=participant.pk).delete()  # cascades to responses, answers
    study_event(study=study, user=user, action="participant_delete", **counts)

    def remove_files() -> None:
        for path in files:
            if path.is_relative_to(root):
                path.unlink(missing_ok=True)

    if files:
        transaction.on_commit(remove_files)
    return counts


def pseudonyms_assign(*, study_id: int, participant_ids: Sequence[int]) -> None:
    """Give each listed participant that has no pseudonym the study's next one (A1, A2, …), in
    the order listed; a participant keeps a pseudonym once given.

    Called at a participant's first stored answer (and by an import, in file order). The study's
    row is locked while its counter ``pseudonyms_issued`` moves on, so two first answers at once
    get two numbers, and a number is never handed out twice, even after its participant is
    deleted (a gap stays). Three queries, four when there is something to assign.
    """
    with transaction.atomic():
        issued = (Study.objects.select_for_update().filter(pk=study_id)
                  .values_list("pseudonyms_issued", flat=True).get())
        wanted = list(dict.fromkeys(participant_ids))
        pending = set(Participant.objects.filter(
            study_id=study_id, pk__in=wanted, pseudonym_number__isnull=True)
            .values_list("pk", flat=True))
        ordered = [pk for pk in wanted if pk in pending]
        if not ordered:
            return
        for start in range(0, len(ordered), 500):  # one UPDATE … CASE per 500 participants
            chunk = ordered[start:start + 500]
            Participant.objects.filter(pk__in=chunk).update(pseudonym_number=Case(
                *(When(pk=pk, then=Value(issued + start + n))
                  for n, pk in enumerate(chunk, start=1)),
                output_field=models.PositiveIntegerField()))
        Study.objects.filter(pk=study_id).update(pseudonyms_issued=issued + len(ordered))


@transaction.atomic
def participant_exclude(*, study: Study, pseudonym: str, excluded: bool,
                        user: User | None = None) -> list[str]:
    """Leave an annotator out of the analysis (or take them back in), by the pseudonym the
    results use: it is written to ``excluded_annotators`` of the study's analysis settings, so
    every later run leaves their answers out. Returns the new list; recorded with the pseudonym."""
    locked = Study.objects.select_for_update().get(pk=study.pk)
    study_writable(locked)
    analysis = locked.analysis
    current = analysis.excluded_annotators
    if excluded == (pseudonym in current):
        raise InputError([Problem(study.slug, None, "excluded_annotators",
                                  f"{pseudonym} is {'already' if excluded else 'not'} excluded")])
    wanted = (*current, pseudonym) if excluded else tuple(p for p in current if p != pseudonym)
    # Through the settings' own validation, as every other change of them.
    locked.analysis = AnalysisSettings.from_mapping({"excluded_annotators": list(wanted)},
                                                    base=analysis)
    locked.save(update_fields=["analysis_settings"])
    study.analysis_settings = locked.analysis_settings
    study_event(study=study, user=user, action="exclude" if excluded else "include",
                pseudonym=pseudonym)
    return list(wanted)
