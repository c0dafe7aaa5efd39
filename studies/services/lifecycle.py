"""A study's history and its state: who changed what (`study_event`), the read-only archive,
the status changes (open, pause, close; docs/lifecycle.md), archiving and deletion."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from core.problems import InputError, Problem

from ..models import Item, Study, StudyEvent
from .creation import study_design


def study_event(*, study: Study, user: User | None, action: str,
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
                     user: User | None = None) -> Study:
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


def study_open(*, study: Study, user: User | None = None) -> Study:
    """Open a draft, paused or closed study to annotators, after checking its design."""
    return study_transition(study=study, action="open", user=user)


def study_close(*, study: Study, user: User | None = None) -> Study:
    return study_transition(study=study, action="close", user=user)


@transaction.atomic
def study_archive(*, study: Study, archived: bool,
                  user: User | None = None) -> Study:
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
                 user: User | None = None) -> dict[str, int]:
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
