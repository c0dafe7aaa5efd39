"""The researcher's pages, one module per family: a study and its settings (`study`), its
lists of items and participants (`lists`), its sharing (`sharing`), its system-level metric scores (`scores`). The URLs name them here."""

from __future__ import annotations

from .lists import (
    comparisons_build,
    item_delete_view,
    item_detail,
    item_edit,
    items_upload,
    participant_action,
    participants_list,
)
from .scores import system_scores_delete_view, system_scores_page
from .sharing import (
    member_invite_view,
    member_remove_view,
    member_role,
    sharing,
)
from .study import (
    controls_add,
    definition_download,
    invite,
    preview,
    study_clone_view,
    study_delete_view,
    study_detail,
    study_history,
    study_index,
    study_new,
    study_new_from_definition,
    study_set_status,
    study_settings,
)

__all__ = [
    "comparisons_build",
    "controls_add",
    "definition_download",
    "invite",
    "item_delete_view",
    "item_detail",
    "item_edit",
    "items_upload",
    "member_invite_view",
    "member_remove_view",
    "member_role",
    "participant_action",
    "participants_list",
    "preview",
    "sharing",
    "study_clone_view",
    "study_delete_view",
    "study_detail",
    "study_history",
    "study_index",
    "study_new",
    "study_new_from_definition",
    "study_set_status",
    "study_settings",
    "system_scores_delete_view",
    "system_scores_page",
]
