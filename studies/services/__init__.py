"""Writes of the studies app, one module per family: `creation` (a study and its questions),
`items` (item imports, edits and deletions), `lifecycle` (history, status changes, archive,
deletion), `participants` (invitations, enrolment, assignment, screening, pseudonyms, exclusion),
`controls` (random control pairs), `sharing` (researchers' roles, invitations by e-mail),
`accounts` (the open sign-up), `comparisons` (the designs of comparative questions), `definition` (settings edited, clone) and `scores` (system-level
metric scores).

Callers import from `studies.services` as before; a test that replaces a function for the
functions that call it replaces it in the module that looks it up (e.g. `studies.services.items`).
"""

from .accounts import researcher_signup
from .comparisons import comparisons_generate, outputs_roles_sync, study_outputs
from .controls import controls_generate
from .creation import (
    QUESTION_FIELDS,
    question_fields,
    question_specs,
    study_create,
    study_create_from_definition,
    study_design,
)
from .definition import OPEN_EDITABLE, QUESTION_SPEC_KEYS, SETTINGS_KEYS, study_clone, study_update
from .items import coref_items_import, item_delete, item_update, items_import
from .lifecycle import (
    TRANSITIONS,
    S,
    study_actions,
    study_archive,
    study_close,
    study_delete,
    study_event,
    study_open,
    study_transition,
    study_writable,
)
from .participants import (
    StudyFull,
    overlap_counts,
    participant_assign,
    participant_consent,
    participant_delete,
    participant_enrol,
    participant_exclude,
    participant_revoke,
    participants_invite,
    pseudonyms_assign,
    screening_decide,
    study_has_room,
)
from .scores import SystemScoresImported, system_scores_delete, system_scores_import
from .sharing import Invitation, member_add, member_change, member_invite, member_remove

__all__ = [
    "OPEN_EDITABLE",
    "QUESTION_FIELDS",
    "QUESTION_SPEC_KEYS",
    "S",
    "SETTINGS_KEYS",
    "TRANSITIONS",
    "Invitation",
    "StudyFull",
    "SystemScoresImported",
    "comparisons_generate",
    "controls_generate",
    "coref_items_import",
    "item_delete",
    "item_update",
    "items_import",
    "member_add",
    "member_change",
    "member_invite",
    "member_remove",
    "outputs_roles_sync",
    "overlap_counts",
    "participant_assign",
    "participant_consent",
    "participant_delete",
    "participant_enrol",
    "participant_exclude",
    "participant_revoke",
    "participants_invite",
    "pseudonyms_assign",
    "question_fields",
    "question_specs",
    "researcher_signup",
    "screening_decide",
    "study_actions",
    "study_archive",
    "study_clone",
    "study_close",
    "study_create",
    "study_create_from_definition",
    "study_delete",
    "study_design",
    "study_event",
    "study_has_room",
    "study_open",
    "study_outputs",
    "study_transition",
    "study_update",
    "study_writable",
    "system_scores_delete",
    "system_scores_import",
]
