"""Writes of the studies app: create studies, import items, invite and enrol participants."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Count, Q
from django.utils import timezone

from analysis.metrics.controls import random_control_pairs

from .definitions import DEFAULT_ANALYSIS
from .design import Design, participant_seed, plan_presentations
from .importers import ItemRow, parse_items
from .item_metrics import pair_rows_score, sentiment_problems
from .models import Assignment, Item, Participant, Scale, Study
from .presets import preset_scale
from .problems import InputError, Problem


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
    language: str = "en",
    consent: str = "",
    instructions: str = "",
    design: dict[str, int] | None = None,
    analysis: dict[str, Any] | None = None,
    completion_url: str = "",
    show_gold: bool = True,
) -> Study:
    """Create a study and its scale from a preset or a custom scale definition."""
    if preset:
        fields = preset_scale(preset, language)
    elif scale and "preset" in scale:
        fields = preset_scale(scale["preset"], language)
    elif scale:
        fields = {
            "preset": "",
            "values": list(scale["values"]),
            "labels": {str(k): str(v) for k, v in (scale.get("labels") or {}).items()},
            "rubric": scale.get("rubric", ""),
            "reductions": {n: {str(k): v for k, v in m.items()}
                           for n, m in (scale.get("reductions") or {}).items()},
            "display": scale.get("display", "text"),
        }
    else:
        raise ValueError("a study needs a preset or a scale")
    design = design or {}
    study = Study(
        owner=owner,
        slug=slug,
        title=title,
        language=language,
        display=fields["display"],
        consent_text=consent,
        instructions=instructions,
        items_per_participant=design.get("items_per_participant", 0),
        annotators_per_item=design.get("annotators_per_item", 3),
        duplicates_per_participant=design.get("duplicates", 0),
        duplicate_min_gap=design.get("duplicate_min_gap", 5),
        seed=design.get("seed", 0),
        completion_url=completion_url,
        show_gold=show_gold,
        analysis_settings={**DEFAULT_ANALYSIS, **(analysis or {})},
    )
    try:
        study.full_clean(exclude=["owner"])
    except ValidationError as exc:
        raise InputError([Problem("study", None, field, "; ".join(msgs))
                          for field, msgs in exc.message_dict.items()]) from None
    try:
        with transaction.atomic():
            study.save()
    except IntegrityError:
        raise InputError([Problem("study", None, "slug", f"a study {slug!r} already exists")]) from None
    Scale.objects.create(
        study=study,
        preset=fields["preset"],
        values=fields["values"],
        labels=fields["labels"],
        rubric=fields["rubric"],
        reductions=fields["reductions"],
    )
    return study


def study_create_from_definition(*, owner: AbstractBaseUser, definition: dict[str, Any]) -> Study:
    """Create a study from a validated definition (see `studies.definitions`)."""
    return study_create(
        owner=owner,
        slug=definition["slug"],
        title=definition["title"],
        scale=definition["scale"],
        language=definition["language"],
        consent=definition["consent"],
        instructions=definition["instructions"],
        design=definition["design"],
        analysis=definition["analysis"],
        completion_url=definition["completion_url"],
        show_gold=definition["show_gold"],
    )


def items_import(*, study: Study, data: bytes, filename: str) -> int:
    """Validate an item file completely, then store every item in one transaction.

    Raises `InputError` listing every problem; nothing is written then.
    """
    if study.status != Study.Status.DRAFT:
        raise InputError([Problem(filename, None, None,
                                  "items can only be added while the study is a draft")])
    existing = set(study.items.values_list("external_id", flat=True))
    rows = parse_items(data, filename=filename, display=study.display, existing_ids=existing,
                       max_bytes=settings.CONCORD_MAX_UPLOAD_BYTES)
    if study.display == Study.Display.PAIR:
        problems = sentiment_problems(rows, filename=filename)
        if problems:
            raise InputError(problems)
        pair_rows_score(rows)  # similarity metrics and sentiment (docs/metrics.md)
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
            )
            for n, row in enumerate(rows)
        )
    return len(rows)


def study_open(*, study: Study) -> Study:
    """Open a draft (or closed) study to annotators, after checking its design can be built."""
    n_items = study.items.count()
    controls = study.items.filter(is_control=True).count()
    problems = study_design(study).problems(available=n_items, controls=controls)
    if problems:
        raise InputError([Problem(study.slug, None, "design", p) for p in problems])
    study.status = Study.Status.OPEN
    study.save(update_fields=["status"])
    return study


def study_close(*, study: Study) -> Study:
    study.status = Study.Status.CLOSED
    study.save(update_fields=["status"])
    return study


@transaction.atomic
def participant_assign(*, participant: Participant) -> int:
    """Build and record the participant's ordered presentations (once).

    The study row is locked so that concurrent enrolments see each other's counts and the
    overlap stays balanced.
    """
    study = Study.objects.select_for_update().get(pk=participant.study_id)
    if participant.assignments.exists():
        return participant.n_assigned
    items = list(study.items.values_list("id", "is_control"))
    counts = dict(
        Item.objects.filter(study=study)
        .annotate(n=Count("assignments", filter=Q(assignments__presentation=1)))
        .values_list("id", "n")
    )
    seed = participant_seed(study.seed, participant.pk)
    plan = plan_presentations(
        [i for i, _ in items],
        design=study_design(study),
        seed=seed,
        assigned_counts=counts,
        control_ids=frozenset(i for i, control in items if control),
    )
    Assignment.objects.bulk_create(
        Assignment(participant=participant, item_id=item, position=pos, presentation=pres)
        for pos, (item, pres) in enumerate(plan)
    )
    participant.order_seed = seed
    participant.n_assigned = len(plan)
    participant.save(update_fields=["order_seed", "n_assigned"])
    return len(plan)


def participants_invite(*, study: Study, count: int, label: str = "") -> list[Participant]:
    """Create `count` participants with their own single-person links and assignments."""
    if not 1 <= count <= 1000:
        raise ValueError("invite between 1 and 1000 participants at a time")
    created = []
    for _ in range(count):
        participant = Participant.objects.create(study=study, source=Participant.Source.INVITE,
                                                 label=label)
        participant_assign(participant=participant)
        created.append(participant)
    return created


def participant_enrol(*, study: Study, source: str, external_id: str, meta: dict) -> Participant:
    """Return the participant of a platform id on the study's open link, creating it once."""
    with transaction.atomic():
        participant, created = Participant.objects.get_or_create(
            study=study, source=source, external_id=external_id, defaults={"meta": meta}
        )
    if created or not participant.n_assigned:
        participant_assign(participant=participant)
        participant.refresh_from_db()
    return participant


def participant_consent(*, participant: Participant) -> None:
    if participant.consented_at is None:
        participant.consented_at = timezone.now()
        participant.save(update_fields=["consented_at"])


def participant_revoke(*, participant: Participant) -> None:
    participant.revoked_at = timezone.now()
    participant.save(update_fields=["revoked_at"])


@transaction.atomic
def controls_generate(*, study: Study, n: int, seed: int | None = None) -> int:
    """Add `n` random control pairs built from the study's own sentences (seed 003 §4).

    Each control joins the `text_a` of one item with the `text_b` of another, never a sentence
    with itself or with its own partner, never repeating a pair of the study (controls
    included); draws are uniform and reproducible from `seed` (default: the study's seed).
    Controls get ids `control-001`, … (after the highest existing one), `is_control`, their
    similarity metrics and sentiment as imported pairs do, and meta `control_of_a` /
    `control_of_b`: the ids of the items their sentences come from.
    """
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
