"""Replay a methods bundle: a new study from the bundle's definition, items, every revision of
every answer with its duration, and the run's analysis settings, so that analysing it gives the
bundle's `results.json` again (docs/exports.md#replaying-a-bundle).

The archive is read from memory with the limits of `core.bundles` (size, members, unpacked
size, member names); every file is validated completely before anything is stored, and the
whole import is one transaction: a problem anywhere leaves nothing behind.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from annotation.store import AnnotatorRow, ResponseRow, responses_store
from core.bundles import DEFINITION as BUNDLE_DEFINITION
from core.bundles import (
    PARTICIPANTS,
    ParticipantState,
    Presentation,
    ZipLimits,
    bundle_members,
    participants_parse,
    revisions_parse,
)
from core.problems import InputError, Problem
from studies.definitions import RESERVED_MESSAGE, RESERVED_SLUGS, SLUG, load_definition
from studies.models import Study
from studies.services import (
    items_import,
    study_create_from_definition,
    study_event,
    system_scores_import,
)

ITEMS, REVISIONS, SCORES = "items.csv", "revisions.csv", "system_scores.csv"
REQUIRED = (BUNDLE_DEFINITION, ITEMS, REVISIONS)
# What a replayed results document may legitimately change: the run's metadata and the slug.
REPLAY_DIFFERS = (("generated_at",), ("study", "run"), ("study", "code_version"),
                  ("study", "slug"))


@dataclass(frozen=True)
class BundleImport:
    """What a replay created (``parts``: what the registered parts stored, by name)."""

    study: Study
    items: int
    annotators: int
    presentations: int
    revisions: int
    answers: int
    parts: dict[str, int] = field(default_factory=dict)


# The parts of a bundle that an app above this one stores (the judges: `judges.apps`), which
# `imports` may not import: each registers its members and its replay from its `ready()`. A
# replay is called, inside the import's transaction, when the bundle holds any of its members,
# with those members' bytes; it returns counts and raises `InputError` to refuse the bundle.
BundleReplay = Callable[..., Mapping[str, int]]
_PARTS: list[tuple[tuple[str, ...], BundleReplay]] = []


def bundle_part_register(*, members: tuple[str, ...], replay: BundleReplay) -> None:
    """Register a part of the bundle replayed by another app (once per process)."""
    if (members, replay) not in _PARTS:
        _PARTS.append((members, replay))


def bundle_limits() -> ZipLimits:
    """The limits of an uploaded bundle, from the settings (`CONCORD_BUNDLE_MAX_*`)."""
    return ZipLimits(max_bytes=settings.CONCORD_BUNDLE_MAX_BYTES,
                     max_members=settings.CONCORD_BUNDLE_MAX_MEMBERS,
                     max_member_bytes=settings.CONCORD_BUNDLE_MAX_UNPACKED_BYTES,
                     max_total_bytes=settings.CONCORD_BUNDLE_MAX_UNPACKED_BYTES)


def bundle_import(*, data: bytes, filename: str, owner: User,
                  slug: str | None = None, max_rows: int | None = None) -> BundleImport:
    """Create a closed study from a methods bundle; raise `InputError` (nothing written).

    ``slug`` replaces the bundle's (default: the bundle's own; a slug already taken is an
    error). The bundle's definition carries the analysis settings of its run, so the new
    study's analysis gives the bundle's results.json again but for `REPLAY_DIFFERS`.
    ``max_rows`` refuses, before anything is written, a revisions file of more rows (the page,
    which imports while the researcher waits).
    """
    name = PurePath(filename).name or "bundle.zip"
    members = bundle_members(data, filename=name,
                             wanted={*REQUIRED, "settings.json", SCORES, PARTICIPANTS,
                                     *(m for names, _ in _PARTS for m in names)},
                             required=[m for m in REQUIRED if m != BUNDLE_DEFINITION],
                             limits=bundle_limits())
    if BUNDLE_DEFINITION not in members:
        why = ("this bundle was written before bundles carried their study's definition; "
               "export the study's bundle again" if "settings.json" in members else
               "is this a bundle export of Concord?")
        raise InputError([Problem(name, None, None, f"{BUNDLE_DEFINITION} is missing: {why}")])
    # Lines bound the rows from above (a comment may hold a line break): cheap, before parsing.
    rows = members[REVISIONS].count(b"\n") - 1
    if max_rows is not None and rows > max_rows:
        raise InputError([Problem(f"{name}/{REVISIONS}", None, None,
                                  f"about {rows} answer rows, more than the {max_rows} this page "
                                  "imports while you wait; import it on the server with "
                                  f"`python manage.py import_bundle {name}`")])
    definition = _definition(members[BUNDLE_DEFINITION], f"{name}/{BUNDLE_DEFINITION}", slug)
    if Study.objects.filter(slug=definition["slug"]).exists():
        option = "" if slug else "; give the new study another one with --slug NEW"
        raise InputError([Problem(name, None, "slug", f"a study {definition['slug']!r} already "
                                                      f"exists{option}")])
    with transaction.atomic():
        study = study_create_from_definition(owner=owner, definition=definition)
        n_items = items_import(study=study, data=members[ITEMS], filename=f"{name}/{ITEMS}",
                               user=owner)
        if SCORES in members:  # a bundle of a study with system-level scores (docs/systems.md)
            system_scores_import(study=study, data=members[SCORES], filename=f"{name}/{SCORES}",
                                 user=owner,
                                 max_bytes=settings.CONCORD_BUNDLE_MAX_UNPACKED_BYTES)
        presented = revisions_parse(
            members[REVISIONS], filename=f"{name}/{REVISIONS}",
            items=study.items.values_list("external_id", flat=True),
            questions={q.key: q.values for q in study.question_list},
            max_bytes=settings.CONCORD_BUNDLE_MAX_UNPACKED_BYTES,
            # Comparative questions: each judgment is checked against its comparison's outputs.
            comparative={q.key: (q.kind, q.comparison) for q in study.question_list
                         if q.is_comparative},
            outputs=dict(study.items.exclude(outputs=[]).values_list("external_id",
                                                                     "outputs")))
        # Bundles written before the participants file replay every annotator as complete.
        states = participants_parse(
            members[PARTICIPANTS], filename=f"{name}/{PARTICIPANTS}",
            annotators={p.annotator for p in presented},
            max_bytes=settings.CONCORD_BUNDLE_MAX_UNPACKED_BYTES,
        ) if PARTICIPANTS in members else {}
        counts: dict[str, Any] = _store(study=study, presented=presented, states=states,
                                        label=f"replayed from {name}")
        parts: dict[str, int] = {}
        for names, replay in _PARTS:
            given = {m: members[m] for m in names if m in members}
            if given:
                parts.update(replay(study=study, members=given, name=name, user=owner))
        counts["parts"] = parts
        now = timezone.now()
        Study.objects.filter(pk=study.pk).update(status=Study.Status.CLOSED,
                                                 status_changed_at=now)
        study.status, study.status_changed_at = Study.Status.CLOSED, now
        # The history says why it is closed (an existing action: no new choice to migrate).
        study_event(study=study, user=owner, action="close", replayed_from=name[:200],
                    **{"from": Study.Status.DRAFT, "to": Study.Status.CLOSED})
    return BundleImport(study=study, items=n_items, **counts)


def _definition(data: bytes, filename: str, slug: str | None) -> dict[str, Any]:
    """The bundle's definition, validated as `create_study --definition` does, its slug
    replaced by ``slug``."""
    definition = load_definition(data, filename)
    if slug is not None:
        if not SLUG.fullmatch(slug):
            raise InputError([Problem("--slug", None, None,
                                      f"{slug[:80]!r} must be at most 60 lower-case letters, "
                                      "digits and dashes, starting with a letter or digit")])
        if slug in RESERVED_SLUGS:
            raise InputError([Problem("--slug", None, None, RESERVED_MESSAGE.format(slug=slug))])
        definition["slug"] = slug
    return definition


def _store(*, study: Study, presented: list[Presentation], states: dict[str, ParticipantState],
           label: str) -> dict[str, int]:
    """Store the participants (named by their pseudonyms), every revision and its answers,
    through `annotation.store.responses_store`.

    Responses are inserted in the file's order (annotator, then position), so the analysis,
    which reads presentations in the order of their first revision, reads them as the bundle's
    study did; each annotator keeps the pseudonym number the bundle gives them, and the
    attention checks are scored again on the first revisions, as the questionnaire scored them.
    An annotator with a recorded state (``states``, the bundle's participants file) keeps it:
    items assigned, finished or not, screened out, stopped, revoked.
    """
    annotators = list(dict.fromkeys(p.annotator for p in presented))
    index = {annotator: n for n, annotator in enumerate(annotators)}
    item_ids = dict(study.items.values_list("external_id", "pk"))
    stored = responses_store(
        study=study, label=label, consented=True, checks_scored=True,
        annotators=[AnnotatorRow(external_id=a, pseudonym_number=int(a[1:]),
                                 presented=states[a].assigned if a in states else None,
                                 recorded=states.get(a))
                    for a in annotators],
        responses=[ResponseRow(annotator=index[p.annotator], item_id=item_ids[p.item],
                               presentation=p.presentation, position=p.position,
                               cells=r.cells, revision=r.number, current=r.current,
                               active_ms=r.active_ms, source=r.source)
                   for p in presented for r in p.revisions])
    return {"annotators": stored.participants, "presentations": stored.presentations,
            "revisions": stored.responses, "answers": stored.answers}
