"""A study's settings, edited as a partial definition, and the study cloned from its definition
(the definition file's format: `studies.definitions`)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import connections, router, transaction

from core.problems import Collector, InputError, Problem
from core.settings import AnalysisSettings, SettingsError

from ..models import Item, Question, Study, SystemScore
from .comparisons import outputs_roles_sync
from .creation import question_specs, study_create_from_definition
from .lifecycle import study_event, study_writable

# What stays editable once a study has been opened (its texts, completion URL and analysis);
# never a question, scale or rubric, nor the design.
OPEN_EDITABLE = frozenset({"title", "instructions", "consent", "completion_text",
                           "completion_url", "analysis"})
SETTINGS_KEYS = ("title", "language", "display", "questions", "consent", "instructions",
                 "completion_text", "completion_url", "show_gold", "design", "analysis")
QUESTION_SPEC_KEYS = ("key", "prompt", "required", "allow_comment", "allow_cant_judge", "preset",
                      "values", "labels", "rubric", "reductions", "kind", "comparison")
# A preset's question names no kind: it is a scale.
_SPEC_DEFAULTS = {"kind": Question.Kind.SCALE, "comparison": {}}


def _current_specs(study: Study) -> list[dict[str, Any]]:
    return [{k: getattr(q, k) for k in QUESTION_SPEC_KEYS} for q in study.question_list]


def _spec_key(spec: dict[str, Any]) -> dict[str, Any]:
    return {k: spec.get(k, _SPEC_DEFAULTS.get(k)) for k in QUESTION_SPEC_KEYS}


@transaction.atomic
def study_update(*, study: Study, changes: Any,
                 user: User | None = None) -> list[str]:
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
    locked.source_order = design["source_order"]
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
        outputs_roles_sync(locked)  # a scale question added or removed: the outputs' role
    study_event(study=locked, user=user, action="settings", fields=changed)
    study.refresh_from_db()  # the caller's copy shows the change too
    study.__dict__.pop("question_list", None)
    return changed


@transaction.atomic
def study_clone(*, study: Study, slug: str, title: str | None = None,
                user: User) -> Study:
    """Create a draft copy of a study under a new slug, owned by ``user``: its settings and
    items and system-level scores, no participant, answer or result (and so no excluded
    annotator). Recorded on both."""
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
                         "check_at", "system", "source", "outputs"))
    table = Item._meta.db_table
    with connections[router.db_for_write(Item)].cursor() as cursor:
        cursor.execute(f"INSERT INTO {table} (study_id, {columns}) "  # noqa: S608 (names only)
                       f"SELECT %s, {columns} FROM {table} WHERE study_id = %s ORDER BY position",
                       [clone.pk, study.pk])
    SystemScore.objects.bulk_create(  # the system-level metric scores (docs/systems.md)
        SystemScore(study=clone, system=system, metric=metric, value=value)
        for system, metric, value in study.system_scores.values_list("system", "metric",
                                                                     "value"))
    study_event(study=clone, user=user, action="clone", **{"from": study.slug})
    study_event(study=study, user=user, action="clone", to=clone.slug)
    return clone
