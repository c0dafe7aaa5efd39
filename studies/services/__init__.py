"""Writes of the studies app: create studies, import items, invite and enrol participants."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path, PurePath
from typing import Any

import numpy as np
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connections, models, router, transaction
from django.db.models import Case, Count, Min, Q, Value, When
from django.utils import timezone

from core.design import Design, checks_place, participant_seed, plan_presentations
from core.items import (
    ItemRow,
    coref_annotation,
    coref_item_id,
    coref_plain_text,
    item_id_problem,
    items_parse,
)
from core.metrics.controls import random_control_pairs
from core.metrics.coref import coref_metrics
from core.metrics.features import error_features
from core.metrics.formats import FORMATS, conll_tokens, read_gold_and_system
from core.metrics.similarity import SIMILARITY_METRICS
from core.problems import Collector, InputError, Problem
from core.screening import item_correct, screening_passed
from core.settings import AnalysisSettings, SettingsError
from core.tabular import decode

from ..bulk import items_import_copy
from ..item_metrics import pair_rows_score, sentiment_problems
from ..models import Assignment, Item, Membership, Participant, Question, Study, StudyEvent
from ..presets import DEFAULT_QUESTION_KEY, preset_questions, preset_scale


def study_design(study: Study) -> Design:
    return Design(
        items_per_participant=study.items_per_participant,
        annotators_per_item=study.annotators_per_item,
        duplicates=study.duplicates_per_participant,
        min_gap=study.duplicate_min_gap,
    )


@transaction.atomic
def study_create(
    *,
    owner: AbstractBaseUser,
    slug: str,
    title: str,
    preset: str | None = None,
    scale: dict[str, Any] | None = None,
    questions: list[dict[str, Any]] | None = None,
    display: str | None = None,
    language: str = "en",
    consent: str = "",
    instructions: str = "",
    design: dict[str, int] | None = None,
    analysis: dict[str, Any] | None = None,
    completion_url: str = "",
    show_gold: bool = True,
    quality: dict[str, Any] | None = None,
    completion_text: str = "",
) -> Study:
    """Create a study and its questions: from a preset, one custom scale, or a list of questions.

    ``preset`` is a scale preset (one question, key ``rating``) or a study preset
    (``summeval-4x5``); ``scale`` a scale preset name in ``{"preset": …}`` or a custom scale
    (values, labels, rubric, reductions, display); ``questions`` a list of question definitions
    (key, prompt, scale, required, comment, cant_judge; see `studies.definitions`).
    ``display`` overrides the item display the scale implies. ``quality`` holds the screening
    pass mark, the screened-out URL and the attention-check policy (`studies.definitions`).
    """
    quality = quality or {}
    shown, specs = question_specs(preset=preset, scale=scale, questions=questions,
                                  language=language)
    design = design or {}
    study = Study(
        owner=owner,
        slug=slug,
        title=title,
        language=language,
        display=display or shown,
        consent_text=consent,
        instructions=instructions,
        items_per_participant=design.get("items_per_participant", 0),
        annotators_per_item=design.get("annotators_per_item", 3),
        duplicates_per_participant=design.get("duplicates", 0),
        duplicate_min_gap=design.get("duplicate_min_gap", 5),
        seed=design.get("seed", 0),
        completion_url=completion_url,
        completion_text=completion_text,
        show_gold=show_gold,
        analysis_settings=_analysis_settings(analysis),
        screening_pass_share=quality.get("screening_pass_share", 1.0),
        screening_pass_count=quality.get("screening_pass_count"),
        screened_out_url=quality.get("screened_out_url", ""),
        check_warn_after=quality.get("check_warn_after", 1),
        check_stop_after=quality.get("check_stop_after", 2),
    )
    # Slugs are unique across researchers, yet another researcher's studies must behave as if
    # they did not exist: the slug is "taken", never "Study with this Slug already exists".
    taken = "this slug is taken; choose another"
    problems = []
    try:
        study.full_clean(exclude=["owner"], validate_unique=False)
    except ValidationError as exc:
        problems = [Problem("study", None, field, "; ".join(msgs))
                    for field, msgs in exc.message_dict.items()]
    if Study.objects.filter(slug=slug).exists():
        problems.append(Problem("study", None, "slug", taken))
    if problems:
        raise InputError(problems)
    try:
        with transaction.atomic():
            study.save()
    except IntegrityError:  # taken between the check and the insert
        raise InputError([Problem("study", None, "slug", taken)]) from None
    Question.objects.bulk_create(Question(study=study, position=n, **spec)
                                 for n, spec in enumerate(specs))
    Membership.objects.create(study=study, user=owner, role=Membership.Role.OWNER, added_by=owner)
    return study


QUESTION_FIELDS = ("key", "prompt", "required", "allow_comment", "allow_cant_judge")


def question_specs(*, preset: str | None = None, scale: dict[str, Any] | None = None,
                   questions: list[dict[str, Any]] | None = None,
                   language: str = "en") -> tuple[str, list[dict[str, Any]]]:
    """Return the item display and the `Question` fields, in order, of a preset, one custom
    scale or a list of questions (one of them, as a definition gives it)."""
    if preset:
        return preset_questions(preset, language)
    if questions:
        specs = [question_fields(q, language) for q in questions]
        shown = specs[0].pop("display")
        for spec in specs[1:]:
            spec.pop("display")
        return shown, specs
    if scale:
        spec = question_fields({"key": DEFAULT_QUESTION_KEY, "scale": scale}, language)
        shown = spec.pop("display")
        return shown, [spec]
    raise ValueError("a study needs a preset, a scale or questions")


def question_fields(definition: dict[str, Any], language: str = "en") -> dict[str, Any]:
    """Return the `Question` fields (and the item display) of one validated question definition.

    ``scale`` is a scale preset's name, ``{"preset": name}`` or a custom scale; ``rubric``
    beside it overrides the scale's; ``comment`` and ``cant_judge`` are the definition file's
    names of ``allow_comment`` and ``allow_cant_judge``.
    """
    scale = definition.get("scale") or {}
    if isinstance(scale, str):
        scale = {"preset": scale}
    if "preset" in scale:
        fields = preset_scale(scale["preset"], language)
    else:
        reductions = scale.get("reductions") or []
        if isinstance(reductions, dict):
            reductions = [{"name": n, "map": m} for n, m in reductions.items()]
        fields = {
            "preset": "",
            "values": list(scale["values"]),
            "labels": {str(k): str(v) for k, v in (scale.get("labels") or {}).items()},
            "rubric": scale.get("rubric", ""),
            "reductions": [{"name": r["name"], "map": {str(k): v for k, v in r["map"].items()}}
                           for r in reductions],
            "display": scale.get("display", "text"),
        }
    if definition.get("rubric"):
        fields["rubric"] = definition["rubric"]
    return {
        **fields,
        "key": definition.get("key", DEFAULT_QUESTION_KEY),
        "prompt": definition.get("prompt", ""),
        "required": bool(definition.get("required", True)),
        "allow_comment": bool(definition.get("comment", definition.get("allow_comment", False))),
        "allow_cant_judge": bool(definition.get("cant_judge",
                                                definition.get("allow_cant_judge", False))),
    }


def _analysis_settings(analysis: dict[str, Any] | None) -> dict[str, Any]:
    """Return the study's analysis settings, every key written out (the defaults included)."""
    try:
        return AnalysisSettings.from_mapping(analysis or {}).to_dict()
    except SettingsError as exc:
        raise InputError([Problem("study", None, f"analysis.{p.column}", p.message)
                          for p in exc.problems]) from None


def study_create_from_definition(*, owner: AbstractBaseUser, definition: dict[str, Any]) -> Study:
    """Create a study from a validated definition (see `studies.definitions`)."""
    return study_create(
        owner=owner,
        slug=definition["slug"],
        title=definition["title"],
        preset=definition.get("preset"),
        scale=definition.get("scale"),
        questions=definition.get("questions"),
        display=definition.get("display"),
        language=definition["language"],
        consent=definition["consent"],
        instructions=definition["instructions"],
        design=definition["design"],
        analysis=definition["analysis"],
        completion_url=definition["completion_url"],
        completion_text=definition["completion_text"],
        show_gold=definition["show_gold"],
        quality=definition.get("quality"),
    )


def items_import(*, study: Study, data: bytes, filename: str, max_bytes: int | None = None,
                 progress: Callable[[float, str], None] | None = None) -> int:
    """Validate an item file completely, then store every item in one transaction.

    `max_bytes` is the size limit (the browser's upload limit by default). On PostgreSQL the
    file is checked row by row and streamed with COPY (`studies.bulk`: memory does not grow with
    the rows), elsewhere parsed whole and stored with `bulk_create`; both store the same rows.
    `progress(fraction, message)`, when given, is told how far it has come. Raises `InputError`
    listing every problem; nothing is written then.
    """
    study_writable(study)
    if study.status != Study.Status.DRAFT:
        raise InputError([Problem(filename, None, None,
                                  "items can only be added while the study is a draft")])
    limit = settings.CONCORD_MAX_UPLOAD_BYTES if max_bytes is None else max_bytes
    questions = {q.key: tuple(q.domain) for q in study.questions.all()}
    if _loads_with_copy():
        with transaction.atomic():
            return items_import_copy(study=study, data=data, filename=filename, max_bytes=limit,
                                     questions=questions, progress=progress)
    existing = set(study.items.values_list("external_id", flat=True))
    rows = items_parse(data, filename=filename, display=study.display, existing_ids=existing,
                       max_bytes=limit, questions=questions)
    if study.display == Study.Display.PAIR:
        problems = sentiment_problems(rows, filename=filename)
        if problems:
            raise InputError(problems)
        pair_rows_score(rows)  # similarity metrics and sentiment (docs/metrics.md)
    if progress:
        progress(0.5, f"storing {len(rows)} items")
    with transaction.atomic():
        start = study.items.count()
        Item.objects.bulk_create(
            Item(
                study=study,
                external_id=row.external_id,
                position=start + n,
                text=row.text,
                text_a=row.text_a,
                text_b=row.text_b,
                is_control=row.is_control,
                metrics=row.metrics,
                features=row.features,
                meta=row.meta,
                role=row.role,
                gold=row.gold,
                tolerance=row.tolerance,
                check_at=row.check_at,
            )
            for n, row in enumerate(rows)
        )
    return len(rows)


def _loads_with_copy() -> bool:
    return connections[router.db_for_write(Item)].vendor == "postgresql"


def coref_items_import(
    *,
    study: Study,
    gold: bytes,
    system: bytes,
    gold_name: str,
    system_name: str,
    fmt: str,
    warnings: Collector | None = None,
) -> int:
    """Validate a gold and a system coreference file completely, then store one item per document.

    The files are read as leniently as the field's scorers read them; what was passed over (a
    stray token in a coreference column, a line with another column count, an unknown RuCoCo
    key) goes to `warnings`, with file, line and column.

    Both files are read with `core.metrics.formats.read_gold_and_system` (CoNLL-2012 or RuCoCo
    JSON). Each document pair becomes an item with
    - `external_id`: `core.items.coref_item_id` (CoNLL `NAME-PART`, RuCoCo the document's name,
      `<gold file stem>#<position>` when unnamed), unique in the file and new to the study;
    - `text` and `annotation`: `core.items.coref_plain_text` / `coref_annotation`;
    - `metrics`: `core.metrics.coref.coref_metrics` (`LEA_split_*` for RuCoCo);
    - `features`: the six error-type counts of `core.metrics.features.error_features`, without
      their `feature:` prefix (as imported `feature:` columns are stored).

    Raises `InputError` listing every problem of both files; nothing is written then.
    """
    study_writable(study)
    if study.status != Study.Status.DRAFT:
        raise InputError([Problem(gold_name, None, None,
                                  "items can only be added while the study is a draft")])
    problems = Collector(gold_name)
    if study.display != Study.Display.COREF:
        problems.add(f"coreference items need a study that shows coreference passages; "
                     f"{study.slug!r} shows {study.display!r} items")
    if fmt not in FORMATS:
        problems.add(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}",
                     column="--format")
    texts = []
    for data, name in ((gold, gold_name), (system, system_name)):
        own = Collector(name)
        texts.append(decode(data, own, max_bytes=settings.CONCORD_MAX_UPLOAD_BYTES))
        problems.extend(own)
    problems.raise_if_any()
    gold_text, system_text = texts
    pairs = read_gold_and_system(gold_text, system_text, format=fmt,
                                 gold_file=gold_name, system_file=system_name, warnings=warnings)

    tokens = conll_tokens(gold_text) if fmt == "conll2012" else {}
    stem = PurePath(gold_name).stem
    existing = set(study.items.values_list("external_id", flat=True))
    seen: set[str] = set()
    items: list[Item] = []
    for n, (g, s) in enumerate(pairs, start=1):
        item_id = coref_item_id(g, s, position=n, stem=stem)
        if not item_id.strip():
            problems.add(f"document {n} has an empty name")
        elif (problem := item_id_problem(item_id)) is not None:
            problems.add(f"document {n}: {problem}")
        elif item_id in seen:
            problems.add(f"document {n}: the name {item_id!r} is used twice")
        elif item_id in existing:
            problems.add(f"document {n}: {item_id!r} is already an item of this study")
        seen.add(item_id)
        annotation = coref_annotation(g, s, tokens=tokens.get(g.name))
        items.append(Item(
            study=study,
            external_id=item_id,
            text=coref_plain_text(annotation),
            annotation=annotation,
            metrics=coref_metrics(g, s),
            features={k.removeprefix("feature:"): v for k, v in error_features(g, s).items()},
        ))
    problems.raise_if_any()
    with transaction.atomic():
        start = study.items.count()
        for n, item in enumerate(items):
            item.position = start + n
        Item.objects.bulk_create(items)
    return len(items)


def study_event(*, study: Study, user: AbstractBaseUser | None, action: str,
                **detail: Any) -> StudyEvent:
    """Record who changed what in a study and when (ids and statuses only, never answers)."""
    return StudyEvent.objects.create(study=study, study_slug=study.slug,
                                     user=user if user is not None and user.pk else None,
                                     action=action, detail=detail)


def study_writable(study: Study, what: str = "changed") -> None:
    """Refuse any change to an archived study (read-only until it is unarchived)."""
    if study.archived_at is not None:
        raise InputError([Problem(study.slug, None, None,
                                  f"the study is archived and cannot be {what}; "
                                  "unarchive it first")])


# The lifecycle (docs/lifecycle.md): action -> (statuses it starts from, status it leads to).
S = Study.Status
TRANSITIONS: dict[str, tuple[frozenset[str], str]] = {
    "open": (frozenset({S.DRAFT, S.PAUSED, S.CLOSED}), S.OPEN),
    "pause": (frozenset({S.OPEN}), S.PAUSED),
    "close": (frozenset({S.OPEN, S.PAUSED}), S.CLOSED),
}


def study_actions(study: Study) -> list[str]:
    """The status changes open to the study now, in the order the study page offers them."""
    if study.archived_at is not None:
        return []
    return [action for action, (sources, _) in TRANSITIONS.items() if study.status in sources]


@transaction.atomic
def study_transition(*, study: Study, action: str,
                     user: AbstractBaseUser | None = None) -> Study:
    """Change the study's status (open, pause, close), recorded with who and when.

    Opening checks that the design can be built from the items; a pause or a close keeps
    accepting answers to items already on screen for the grace period
    (``CONCORD_ANSWER_GRACE_SECONDS``, see `annotation.services.response_submit`).
    """
    if action not in TRANSITIONS:
        raise InputError([Problem(study.slug, None, "action", f"unknown action {action!r}")])
    locked = Study.objects.select_for_update().get(pk=study.pk)
    study_writable(locked, "opened, paused or closed")
    sources, target = TRANSITIONS[action]
    if locked.status not in sources:
        raise InputError([Problem(study.slug, None, "status",
                                  f"a {locked.get_status_display().lower()} study cannot be "
                                  f"{'opened' if action == 'open' else action + 'd'}")])
    if target == S.OPEN:
        # The design is about the main items: screening and check items are shown to everyone.
        n_items = locked.items.filter(role=Item.Role.MAIN).count()
        controls = locked.items.filter(is_control=True).count()
        problems = study_design(locked).problems(available=n_items, controls=controls)
        if problems:
            raise InputError([Problem(study.slug, None, "design", p) for p in problems])
    before = locked.status
    study.status = target
    study.status_changed_at = timezone.now()
    study.save(update_fields=["status", "status_changed_at"])
    study_event(study=study, user=user, action=action, **{"from": before, "to": target})
    return study


def study_open(*, study: Study, user: AbstractBaseUser | None = None) -> Study:
    """Open a draft, paused or closed study to annotators, after checking its design."""
    return study_transition(study=study, action="open", user=user)


def study_close(*, study: Study, user: AbstractBaseUser | None = None) -> Study:
    return study_transition(study=study, action="close", user=user)


@transaction.atomic
def study_archive(*, study: Study, archived: bool,
                  user: AbstractBaseUser | None = None) -> Study:
    """Archive a study that is not open or paused (hidden from the default list, read-only),
    or unarchive it."""
    if archived:
        if study.archived_at is not None:
            raise InputError([Problem(study.slug, None, None, "the study is already archived")])
        if study.status in (S.OPEN, S.PAUSED):
            raise InputError([Problem(study.slug, None, "status",
                                      "close the study before archiving it")])
        study.archived_at = timezone.now()
    else:
        if study.archived_at is None:
            raise InputError([Problem(study.slug, None, None, "the study is not archived")])
        study.archived_at = None
    study.save(update_fields=["archived_at"])
    study_event(study=study, user=user, action="archive" if archived else "unarchive")
    return study


@transaction.atomic
def study_delete(*, study: Study, confirm_slug: str,
                 user: AbstractBaseUser | None = None) -> dict[str, int]:
    """Delete a study with its items, participants and answers, once its slug is typed.

    Its analysis runs (with their stored results) and export records go with it, and the export
    files once the deletion commits. The audit entry records that it happened and the counts,
    never the data; it outlives the study. Returns the counts deleted.
    """
    if confirm_slug.strip() != study.slug:
        raise InputError([Problem(study.slug, None, "confirm_slug",
                                  "type the study's slug exactly to delete it")])
    counts = {"items": study.items.count(), "participants": study.participants.count()}
    study_event(study=study, user=user, action="delete", **counts)
    # Export files live in EXPORTS_DIR/<study id>/ (exports.selectors.export_file_path).
    folder = Path(settings.EXPORTS_DIR) / str(study.pk)
    study.delete()
    transaction.on_commit(lambda: shutil.rmtree(folder, ignore_errors=True))
    return counts


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
    items = list(study.items.filter(role=Item.Role.MAIN).values_list("id", "is_control"))
    counts = overlap_counts(study=study)
    seed = participant_seed(study.seed, participant.pk)
    plan = plan_presentations(
        [i for i, _ in items],
        design=study_design(study),
        seed=seed,
        assigned_counts=counts,
        control_ids=frozenset(i for i, control in items if control),
    )
    checks = list(study.items.filter(role=Item.Role.CHECK).order_by("position")
                  .values_list("id", "check_at"))
    full, check_positions = checks_place(plan, checks, seed=seed)
    Assignment.objects.bulk_create(
        Assignment(participant=participant, item_id=item, position=offset + pos,
                   presentation=pres)
        for pos, (item, pres) in enumerate(full)
    )
    participant.order_seed = seed
    participant.n_assigned = offset + len(full)
    participant.check_positions = [offset + p for p in check_positions]
    participant.save(update_fields=["order_seed", "n_assigned", "check_positions"])
    return offset + len(full)


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
def participants_invite(*, study: Study, count: int, label: str = "") -> list[Participant]:
    """Create `count` participants with their own single-person links and assignments.

    All or none: a study whose design cannot be built (no items yet) leaves no participant.
    """
    study_writable(study)
    if not 1 <= count <= 1000:
        raise ValueError("invite between 1 and 1000 participants at a time")
    created = []
    for _ in range(count):
        participant = Participant.objects.create(study=study, source=Participant.Source.INVITE,
                                                 label=label)
        participant_assign(participant=participant)
        created.append(participant)
    return created


def participant_enrol(*, study: Study, source: str, external_id: str, meta: dict,
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


def participant_revoke(*, participant: Participant, user: AbstractBaseUser | None = None) -> None:
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
                       user: AbstractBaseUser | None = None) -> dict[str, Any]:
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
    excluded = list(study.analysis_settings.get("excluded_annotators") or [])
    if participant.pseudonym in excluded:
        study.analysis_settings = {**study.analysis_settings, "excluded_annotators": [
            name for name in excluded if name != participant.pseudonym]}
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
                        user: AbstractBaseUser | None = None) -> list[str]:
    """Leave an annotator out of the analysis (or take them back in), by the pseudonym the
    results use: it is written to ``excluded_annotators`` of the study's analysis settings, so
    every later run leaves their answers out. Returns the new list; recorded with the pseudonym."""
    locked = Study.objects.select_for_update().get(pk=study.pk)
    study_writable(locked)
    current = list(locked.analysis_settings.get("excluded_annotators") or [])
    if excluded == (pseudonym in current):
        raise InputError([Problem(study.slug, None, "excluded_annotators",
                                  f"{pseudonym} is {'already' if excluded else 'not'} excluded")])
    wanted = [*current, pseudonym] if excluded else [p for p in current if p != pseudonym]
    locked.analysis_settings = _analysis_settings(
        {**locked.analysis_settings, "excluded_annotators": wanted})
    locked.save(update_fields=["analysis_settings"])
    study.analysis_settings = locked.analysis_settings
    study_event(study=study, user=user, action="exclude" if excluded else "include",
                pseudonym=pseudonym)
    return list(locked.analysis_settings["excluded_annotators"])


@transaction.atomic
def controls_generate(*, study: Study, n: int, seed: int | None = None) -> int:
    """Add `n` random control pairs built from the study's own sentences (Solomon et al. 2021, §4).

    Each control joins the `text_a` of one item with the `text_b` of another, never a sentence
    with itself or with its own partner, never repeating a pair of the study (controls
    included); draws are uniform and reproducible from `seed` (default: the study's seed).
    Controls get ids `control-001`, … (after the highest existing one), `is_control`, their
    similarity metrics and sentiment as imported pairs do, and meta `control_of_a` /
    `control_of_b`: the ids of the items their sentences come from.
    """
    study_writable(study)
    if study.status != Study.Status.DRAFT or study.display != Study.Display.PAIR:
        raise InputError([Problem(study.slug, None, None,
                                  "controls can only be added to a sentence-pair study in draft")])
    if not 1 <= n <= 1000:
        raise InputError([Problem(study.slug, None, "n", "generate between 1 and 1000 controls")])
    study = Study.objects.select_for_update().get(pk=study.pk)  # one generation at a time
    items = list(study.items.order_by("is_control", "position")
                 .values_list("external_id", "text_a", "text_b"))
    try:
        drawn = random_control_pairs(items, n, np.random.default_rng(
            study.seed if seed is None else seed))
    except ValueError as exc:
        raise InputError([Problem(study.slug, None, "n", str(exc))]) from None
    ids = {external_id for external_id, _, _ in items}
    numbers = [int(i[8:]) for i in ids if re.fullmatch(r"control-\d+", i)]
    first = max(numbers, default=0) + 1
    rows = [ItemRow(line=0, external_id=f"control-{first + k:03d}", text_a=a, text_b=b,
                    is_control=True, meta={"control_of_a": str(src_a), "control_of_b": str(src_b)})
            for k, (a, b, (src_a, src_b)) in enumerate(drawn)]
    pair_rows_score(rows)
    start = study.items.count()
    Item.objects.bulk_create(
        Item(study=study, external_id=row.external_id, position=start + k, text_a=row.text_a,
             text_b=row.text_b, is_control=True, metrics=row.metrics, meta=row.meta)
        for k, row in enumerate(rows)
    )
    return len(rows)


def _item_changeable(item: Item, what: str) -> None:
    study = item.study
    study_writable(study)
    if study.status != Study.Status.DRAFT:
        raise InputError([Problem(item.external_id, None, None,
                                  f"items can only be {what} while the study is a draft")])
    if item.responses.exists():
        raise InputError([Problem(item.external_id, None, None,
                                  f"this item has answers (imported responses), so it cannot be "
                                  f"{what}")])


@transaction.atomic
def item_update(*, item: Item, user: AbstractBaseUser | None = None, text: str | None = None,
                text_a: str | None = None, text_b: str | None = None,
                is_control: bool | None = None) -> list[str]:
    """Change an item of a draft study (its texts, its control flag); return the changed fields.

    An annotated coreference item's text comes from its documents and is not edited here
    (delete it and upload the documents again); a plain passage is. An edited sentence pair gets its similarity metrics and its
    VADER sentiment computed again (imported sentiment is kept). Recorded in the history with
    the item's id and the names of the fields changed, never the texts.
    """
    _item_changeable(item, "edited")
    study = item.study
    wanted: dict[str, Any] = {"is_control": is_control}
    if study.display == Study.Display.PAIR:
        wanted |= {"text_a": text_a, "text_b": text_b}
    elif study.display == Study.Display.TEXT or not item.annotation:
        wanted |= {"text": text}
    changed = [name for name, value in wanted.items()
               if value is not None and value != getattr(item, name)]
    for name in changed:
        setattr(item, name, wanted[name])
    for name in ("text", "text_a", "text_b"):
        if name in changed and not getattr(item, name).strip():
            raise InputError([Problem(item.external_id, None, name, "the text cannot be empty")])
    if not changed:
        return []
    if study.display == Study.Display.PAIR and {"text_a", "text_b"} & set(changed):
        meta = {k: v for k, v in item.meta.items()
                if item.meta.get("sentiment_source") == "imported"
                or k not in ("sentiment_a", "sentiment_b", "sentiment_source")}
        row = ItemRow(line=0, external_id=item.external_id, text_a=item.text_a,
                      text_b=item.text_b, metrics={k: v for k, v in item.metrics.items()
                                                   if k not in SIMILARITY_METRICS}, meta=meta)
        pair_rows_score([row])
        item.metrics, item.meta = row.metrics, row.meta
        changed += ["metrics"]
    item.save(update_fields=[*changed, *(["meta"] if "metrics" in changed else [])])
    study_event(study=study, user=user, action="item_edit", item=item.external_id,
                fields=sorted(set(changed)))
    return changed


@transaction.atomic
def item_delete(*, item: Item, user: AbstractBaseUser | None = None) -> None:
    """Delete an item of a draft study that has no answers; recorded with its id."""
    _item_changeable(item, "deleted")
    study_event(study=item.study, user=user, action="item_delete", item=item.external_id)
    item.delete()


# --- sharing: researchers' roles in a study ------------------------------------------------------


def _owners_left(study: Study, *, without: Membership) -> bool:
    return study.memberships.filter(role=Membership.Role.OWNER).exclude(pk=without.pk).exists()


def _role(study: Study, role: str) -> str:
    if role not in Membership.Role.values:
        raise InputError([Problem(study.slug, None, "role",
                                  f"role must be one of {', '.join(Membership.Role.values)}, "
                                  f"not {role!r}")])
    return role


@transaction.atomic
def member_add(*, study: Study, username: str, role: str,
               user: AbstractBaseUser | None = None) -> Membership:
    """Share the study with a researcher who has an account, by user name, as viewer, editor or
    owner. Recorded. A user name without an account, or already sharing the study, is refused."""
    from django.contrib.auth import get_user_model

    Study.objects.select_for_update().filter(pk=study.pk).values_list("pk").get()
    role = _role(study, role)
    name = username.strip()
    people = get_user_model().objects
    colleague = people.filter(**{people.model.USERNAME_FIELD: name}, is_active=True).first()
    if not name or colleague is None:
        raise InputError([Problem(study.slug, None, "username",
                                  f"no researcher account is called {name!r}")])
    if study.memberships.filter(user=colleague).exists():
        raise InputError([Problem(study.slug, None, "username",
                                  f"{name} already has a role in this study; change it instead")])
    membership = Membership.objects.create(study=study, user=colleague, role=role, added_by=user)
    study_event(study=study, user=user, action="member_add", researcher=name, role=role)
    return membership


@transaction.atomic
def member_change(*, membership: Membership, role: str,
                  user: AbstractBaseUser | None = None) -> Membership:
    """Change a researcher's role; the study's last owner stays an owner. Recorded."""
    study = Study.objects.select_for_update().get(pk=membership.study_id)
    membership = Membership.objects.select_related("user").get(pk=membership.pk)
    role = _role(study, role)
    if role == membership.role:
        raise InputError([Problem(study.slug, None, "role",
                                  f"{membership.user.get_username()} is already {role}")])
    if membership.role == Membership.Role.OWNER and not _owners_left(study, without=membership):
        raise InputError([Problem(study.slug, None, "role",
                                  "the study's last owner stays an owner: make someone else an "
                                  "owner first")])
    before = membership.role
    membership.role = role
    membership.save(update_fields=["role"])
    study_event(study=study, user=user, action="member_change",
                researcher=membership.user.get_username(), **{"from": before, "to": role})
    return membership


@transaction.atomic
def member_remove(*, membership: Membership, user: AbstractBaseUser | None = None) -> None:
    """Take a researcher's role away (they then see the study as if it did not exist); the last
    owner cannot be removed. Recorded."""
    study = Study.objects.select_for_update().get(pk=membership.study_id)
    membership = Membership.objects.select_related("user").get(pk=membership.pk)
    if membership.role == Membership.Role.OWNER and not _owners_left(study, without=membership):
        raise InputError([Problem(study.slug, None, "role",
                                  "the study's last owner cannot be removed: make someone else "
                                  "an owner first")])
    membership.delete()
    study_event(study=study, user=user, action="member_remove",
                researcher=membership.user.get_username(), role=membership.role)


# --- settings: a study's definition, edited, downloaded, cloned -----------------------------------

# What stays editable once a study has been opened (its texts, completion URL and analysis);
# never a question, scale or rubric, nor the design.
OPEN_EDITABLE = frozenset({"title", "instructions", "consent", "completion_text",
                           "completion_url", "analysis"})
SETTINGS_KEYS = ("title", "language", "display", "questions", "consent", "instructions",
                 "completion_text", "completion_url", "show_gold", "design", "analysis")
QUESTION_SPEC_KEYS = ("key", "prompt", "required", "allow_comment", "allow_cant_judge", "preset",
                      "values", "labels", "rubric", "reductions")


def _current_specs(study: Study) -> list[dict[str, Any]]:
    return [{k: getattr(q, k) for k in QUESTION_SPEC_KEYS} for q in study.question_list]


def _spec_key(spec: dict[str, Any]) -> dict[str, Any]:
    return {k: spec.get(k) for k in QUESTION_SPEC_KEYS}


@transaction.atomic
def study_update(*, study: Study, changes: Any,
                 user: AbstractBaseUser | None = None) -> list[str]:
    """Change a study's settings from a partial definition (the keys of a definition file but
    ``slug``; ``design`` and ``analysis`` may be partial). Returns the names of the fields that
    changed, recorded in one history entry.

    Everything may change while the study is a draft (its questions only while no answer
    refers to them); once it has been opened, only the title, instructions, consent text,
    completion URL and analysis settings. Every problem is named at once; nothing is changed
    then.
    """
    from ..definitions import validate_definition
    from ..selectors import study_definition

    errors = Collector("settings")
    if not isinstance(changes, dict):
        raise InputError([Problem("settings", None, None, "send the changes as an object")])
    locked = Study.objects.select_for_update().get(pk=study.pk)
    study_writable(locked)
    if "slug" in changes:
        errors.add("the slug cannot change (clone the study to get another one)", column="slug")
    for key in sorted(set(changes) - set(SETTINGS_KEYS) - {"slug", "preset", "scale"}):
        errors.add(f"unknown key {key!r}", column=key)
    errors.raise_if_any()
    current = study_definition(study=locked)
    merged = dict(current)
    if {"preset", "scale", "questions"} & set(changes):
        for key in ("preset", "scale", "questions"):
            merged.pop(key, None)
    for key, value in changes.items():
        if key in ("design", "analysis") and isinstance(value, dict):
            merged[key] = {**current[key], **value}
        else:
            merged[key] = value
    if "analysis" in changes and isinstance(changes["analysis"], dict):
        try:  # nested tables (heuristics) may be partial, over the study's
            merged["analysis"] = AnalysisSettings.from_mapping(
                changes["analysis"], base=AnalysisSettings.from_mapping(current["analysis"])
            ).to_dict()
        except SettingsError as exc:
            for p in exc.problems:
                errors.add(p.message, column=f"analysis.{p.column}")
            errors.raise_if_any()
    merged["slug"] = locked.slug
    definition = validate_definition(merged, errors)
    shown, specs = question_specs(preset=definition["preset"], scale=definition["scale"],
                                  questions=definition["questions"],
                                  language=definition["language"])
    design = {**current["design"], **definition["design"]}
    new = {"title": definition["title"], "language": definition["language"],
           "display": definition["display"] or shown,
           "questions": [_spec_key(spec) for spec in specs],
           "consent": definition["consent"], "instructions": definition["instructions"],
           "completion_url": definition["completion_url"], "show_gold": definition["show_gold"],
           "completion_text": definition["completion_text"],
           "design": design, "analysis": definition["analysis"]}
    old = {**{k: current[k] for k in SETTINGS_KEYS}, "questions": _current_specs(locked)}
    changed = [key for key in SETTINGS_KEYS if new[key] != old[key]]
    if not changed:
        return []
    if locked.status != Study.Status.DRAFT:
        frozen = [key for key in changed if key not in OPEN_EDITABLE]
        if frozen:
            raise InputError([Problem(locked.slug, None, key, (
                f"{key} cannot change once the study has been opened (only the title, "
                "instructions, consent, completion text and URL and analysis settings can)"))
                for key in frozen])
    if "questions" in changed and locked.questions.filter(answers__isnull=False).exists():
        raise InputError([Problem(locked.slug, None, "questions",
                                  "the questions cannot change: answers refer to them")])
    locked.title, locked.language = new["title"], new["language"]
    locked.display = new["display"]
    locked.consent_text, locked.instructions = new["consent"], new["instructions"]
    locked.completion_url, locked.show_gold = new["completion_url"], new["show_gold"]
    locked.completion_text = new["completion_text"]
    locked.items_per_participant = design["items_per_participant"]
    locked.annotators_per_item = design["annotators_per_item"]
    locked.duplicates_per_participant = design["duplicates"]
    locked.duplicate_min_gap = design["duplicate_min_gap"]
    locked.seed = design["seed"]
    locked.analysis_settings = new["analysis"]
    try:
        locked.full_clean(exclude=["owner"], validate_unique=False)
    except ValidationError as exc:
        raise InputError([Problem(locked.slug, None, field, "; ".join(msgs))
                          for field, msgs in exc.message_dict.items()]) from None
    locked.save()
    if "questions" in changed:
        locked.questions.all().delete()
        Question.objects.bulk_create(Question(study=locked, position=n, **spec)
                                     for n, spec in enumerate(specs))
    study_event(study=locked, user=user, action="settings", fields=changed)
    study.refresh_from_db()  # the caller's copy shows the change too
    study.__dict__.pop("question_list", None)
    return changed


@transaction.atomic
def study_clone(*, study: Study, slug: str, title: str | None = None,
                user: AbstractBaseUser) -> Study:
    """Create a draft copy of a study under a new slug, owned by ``user``: its settings and
    items, no participant, answer or result (and so no excluded annotator). Recorded on both."""
    from ..definitions import validate_definition
    from ..selectors import study_definition

    definition = study_definition(study=study)
    definition["slug"] = slug
    definition["title"] = title if title and title.strip() else f"{study.title} (copy)"
    definition["analysis"] = {**definition["analysis"], "excluded_annotators": []}
    definition = validate_definition(definition, Collector("clone"))
    clone = study_create_from_definition(owner=user, definition=definition)
    # The items, copied by one INSERT … SELECT (no row passes through Python).
    columns = ", ".join(("external_id", "position", "text", "text_a", "text_b", "is_control",
                         "metrics", "features", "meta", "annotation", "role", "gold", "tolerance",
                         "check_at"))
    table = Item._meta.db_table
    with connections[router.db_for_write(Item)].cursor() as cursor:
        cursor.execute(f"INSERT INTO {table} (study_id, {columns}) "  # noqa: S608 (names only)
                       f"SELECT %s, {columns} FROM {table} WHERE study_id = %s ORDER BY position",
                       [clone.pk, study.pk])
    study_event(study=clone, user=user, action="clone", **{"from": study.slug})
    study_event(study=study, user=user, action="clone", to=clone.slug)
    return clone
