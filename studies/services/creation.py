"""Create a study and its questions: from a preset, one custom scale, a list of questions or
a validated definition (`studies.definitions`)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from core.comparative import is_comparative, options_clean
from core.design import Design
from core.problems import InputError, Problem
from core.settings import AnalysisSettings, SettingsError

from ..models import Membership, Question, Study
from ..presets import DEFAULT_QUESTION_KEY, preset_questions, preset_scale


def study_design(study: Study) -> Design:
    return Design(
        items_per_participant=study.items_per_participant,
        annotators_per_item=study.annotators_per_item,
        duplicates=study.duplicates_per_participant,
        min_gap=study.duplicate_min_gap,
        source_order=study.source_order,
    )


@transaction.atomic
def study_create(
    *,
    owner: User,
    slug: str,
    title: str,
    preset: str | None = None,
    scale: dict[str, Any] | None = None,
    questions: list[dict[str, Any]] | None = None,
    display: str | None = None,
    language: str = "en",
    consent: str = "",
    instructions: str = "",
    design: dict[str, Any] | None = None,
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
        source_order=design.get("source_order", Study.SourceOrder.SPREAD),
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

    ``kind`` is ``scale`` (the default) or a comparative kind (pairwise, ranking, bws) whose
    ``options`` go to ``comparison`` (`core.comparative.options_clean`) and which has no scale.
    ``scale`` is a scale preset's name, ``{"preset": name}`` or a custom scale; ``rubric``
    beside it overrides the scale's; ``comment`` and ``cant_judge`` are the definition file's
    names of ``allow_comment`` and ``allow_cant_judge``.
    """
    kind = definition.get("kind", Question.Kind.SCALE)
    if is_comparative(kind):
        # A comparative question: its options, no scale (values [], labels {}).
        return {"kind": kind, "comparison": options_clean(kind, definition.get("options")),
                "preset": "", "values": [], "labels": {}, "reductions": [],
                "rubric": definition.get("rubric", "") or "", "display": "text",
                **_common_fields(definition)}
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
    return {**fields, "kind": Question.Kind.SCALE, "comparison": {},
            **_common_fields(definition)}


def _common_fields(definition: dict[str, Any]) -> dict[str, Any]:
    """The fields every kind of question has, from its definition."""
    return {
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


def study_create_from_definition(*, owner: User, definition: dict[str, Any]) -> Study:
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
