"""Study definition files (JSON or TOML): read and validate completely, name every problem."""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import replace
from pathlib import PurePath
from typing import Any

from django.core.exceptions import ValidationError

from core.comparative import JudgmentError, is_comparative, options_clean
from core.design import SOURCE_ORDERS
from core.problems import Collector, InputError
from core.settings import AnalysisSettings, SettingsError
from core.tabular import json_too_deep
from core.text import first_bad_text

from .presets import preset_names, scale_preset_names

TOP_KEYS = {"slug", "title", "language", "display", "preset", "scale", "questions", "consent",
            "instructions", "design", "analysis", "completion_url", "show_gold", "quality",
            "completion_text"}
QUALITY_KEYS = {"screening_pass_share", "screening_pass_count", "screened_out_url",
                "check_warn_after", "check_stop_after"}
DESIGN_KEYS = {"items_per_participant", "annotators_per_item", "duplicates", "duplicate_min_gap", "seed",
               "source_order"}

SCALE_KEYS = {"preset", "values", "labels", "rubric", "reductions", "display"}
QUESTION_KEYS = {"key", "prompt", "scale", "rubric", "required", "comment", "cant_judge", "kind",
                 "options"}
# A question's kind: a rating scale, or a comparative question (core/comparative.py,
# docs/comparisons.md) asked about the study's comparisons, with its options and no scale.
QUESTION_KINDS = ("scale", "pairwise", "ranking", "bws")
DISPLAYS = ("text", "pair", "coref")
MAX_QUESTIONS = 20
QUESTION_KEY = re.compile(r"[a-z][a-z0-9_-]{0,39}")
SLUG = re.compile(r"[a-z0-9][a-z0-9-]{0,59}")
# Slugs a study cannot have: /studies/new/ creates a study, so a study `new` could never be
# reached (its page, its bundle's replay, its API routes all answer for something else).
RESERVED_SLUGS = frozenset({"new"})
RESERVED_MESSAGE = "{slug!r} is reserved (the address of the page that creates a study); choose another slug"


def refuse_reserved_slug(value: str) -> None:
    """A form's and a serializer's validator of a new study's slug."""
    if value in RESERVED_SLUGS:
        raise ValidationError(RESERVED_MESSAGE.format(slug=value), code="reserved")


# Python's JSON parser recurses (about 2 000 levels end in RecursionError); a definition nests
# about 5 (questions, a scale, its labels).
MAX_DEPTH = 64


def load_definition(data: bytes, filename: str) -> dict[str, Any]:
    """Parse and validate a definition; return it normalised or raise `InputError`."""
    errors = Collector(filename)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        errors.add(f"not UTF-8 (byte offset {exc.start})")
        errors.raise_if_any()
    try:
        if PurePath(filename).suffix.lower() == ".toml":
            raw = tomllib.loads(text)
        elif json_too_deep(text, MAX_DEPTH):
            errors.add(f"invalid JSON: nested deeper than {MAX_DEPTH} levels")
            errors.raise_if_any()
        else:
            raw = json.loads(text)
    except RecursionError:  # TOML's parser recurses too (`a = [[[[…]]]]`)
        errors.add(f"nested deeper than this reader can follow (at most {MAX_DEPTH} levels)")
        errors.raise_if_any()
    except json.JSONDecodeError as exc:
        errors.add(f"invalid JSON: {exc.msg}", line=exc.lineno, column=exc.colno)
        errors.raise_if_any()
    except tomllib.TOMLDecodeError as exc:
        errors.add(f"invalid TOML: {exc}")
        errors.raise_if_any()
    if not isinstance(raw, dict):
        errors.add("the definition must be an object/table")
        errors.raise_if_any()
    try:
        return validate_definition(raw, errors)
    except InputError as exc:
        # TOML and JSON parsers give no position for a value: find the line that sets the key
        # (its last path component) so that every problem points into the file.
        raise InputError([replace(p, line=p.line if p.line is not None else
                                  _key_line(text, p.column)) for p in exc.problems],
                         omitted=exc.omitted) from None


def _key_line(text: str, column: Any) -> int | None:
    """The first line that sets the key a problem names (`design.seed` → `seed = …`, `"seed":`,
    or the table `[design]`), or None."""
    if not isinstance(column, str) or not column:
        return None
    parts = [p for p in re.split(r"[.\[\]]", column) if p and not p.isdigit()]
    for key in reversed(parts):
        pattern = re.compile(rf'^\s*(?:"{re.escape(key)}"\s*:|{re.escape(key)}\s*=|'
                             rf'\[+\s*{re.escape(key)}\s*\]+)|"{re.escape(key)}"\s*:', re.M)
        found = pattern.search(text)
        if found:
            return text.count("\n", 0, found.start()) + 1
    return None


def validate_definition(raw: dict[str, Any], errors: Collector) -> dict[str, Any]:
    """Check a definition (as read from a file, or merged from a study's settings and changes),
    naming every problem at once in `errors`; return it completed with the defaults."""
    # First, alone: a NUL cannot be stored (PostgreSQL refuses it), a lone surrogate cannot even
    # be written back in a message (it is not UTF-8), so no other check may quote the value.
    bad = first_bad_text(raw)
    if bad:
        errors.add(f"{bad[0]} {bad[1]}", column=bad[0])
        errors.raise_if_any()
    language = _texts(raw, errors)
    preset, scale, questions, display = _question_source(raw, errors)
    design = _design(raw.get("design", {}) or {}, errors)
    quality = _quality(raw.get("quality", {}), errors)
    analysis_settings = _analysis(raw.get("analysis", {}) or {}, errors)
    errors.raise_if_any()
    return {
        "slug": raw["slug"].strip(),
        "title": raw["title"].strip(),
        "language": language,
        "preset": preset,
        "scale": scale,
        "questions": questions,
        "display": display,
        "consent": raw.get("consent", ""),
        "instructions": raw.get("instructions", ""),
        "design": design,
        "analysis": analysis_settings.to_dict(),
        "completion_url": raw.get("completion_url", ""),
        "completion_text": raw.get("completion_text", ""),
        "show_gold": bool(raw.get("show_gold", True)),
        "quality": quality,
    }


def _texts(raw: dict[str, Any], errors: Collector) -> str:
    """Check the top-level keys, the slug, the title, the texts and the language; return the
    language."""
    for key in sorted(set(raw) - TOP_KEYS):
        errors.add(f"unknown key {key!r}", column=key)
    for key in ("slug", "title"):
        if not isinstance(raw.get(key), str) or not raw.get(key, "").strip():
            errors.add(f"{key!r} is required (a non-empty string)", column=key)
    # The slug's form is checked here, with everything else, not when the study is saved.
    slug = raw.get("slug")
    if isinstance(slug, str) and slug.strip() and not SLUG.fullmatch(slug.strip()):
        errors.add(f"slug {slug.strip()[:80]!r} must be at most 60 lower-case letters, digits and "
                   "dashes, starting with a letter or digit", column="slug")
    elif isinstance(slug, str) and slug.strip() in RESERVED_SLUGS:
        errors.add(RESERVED_MESSAGE.format(slug=slug.strip()), column="slug")
    for key in ("consent", "instructions", "completion_text", "completion_url"):
        if key in raw and not isinstance(raw[key], str):
            errors.add(f"{key!r} is a string", column=key)
    language: str = raw.get("language", "en")
    if language not in {"en", "fr"}:
        errors.add(f"language must be 'en' or 'fr', not {language!r}", column="language")
    return language


def _question_source(raw: dict[str, Any], errors: Collector) -> tuple[Any, Any, Any, Any]:
    """Check that exactly one of preset, scale and questions is given, that one, and the item
    display; return (preset, scale, questions, display), the one given validated."""
    preset, scale, questions = raw.get("preset"), raw.get("scale"), raw.get("questions")
    given = [name for name in ("preset", "scale", "questions") if raw.get(name) is not None]
    if len(given) != 1:
        errors.add("give exactly one of 'preset' (a preset name), 'scale' (one question's scale) "
                   f"or 'questions' (a list of questions); found {', '.join(given) or 'none'}",
                   column="questions" if not given else given[-1])
    if preset is not None and preset not in preset_names():
        errors.add(f"unknown preset {preset!r} (choose {', '.join(preset_names())})",
                   column="preset")
    if scale is not None:
        scale = _scale(scale, "scale", errors)
    if questions is not None:
        questions = _questions(questions, errors)
    display = raw.get("display")
    if display is not None and display not in DISPLAYS:
        errors.add(f"display must be one of {', '.join(DISPLAYS)}, not {display!r}",
                   column="display")
    return preset, scale, questions, display


def _design(design: Any, errors: Collector) -> dict[str, Any]:
    """Check the `design` table (its keys, non-negative integers, at least one annotator per
    item, repeats never adjacent); return it ({} when it is not a table)."""
    if not isinstance(design, dict):
        errors.add("'design' must be a table", column="design")
        return {}
    for key in sorted(set(design) - DESIGN_KEYS):
        errors.add(f"unknown key {key!r}", column=f"design.{key}")
    if "source_order" in design and design["source_order"] not in SOURCE_ORDERS:
        errors.add(f"source_order must be {' or '.join(SOURCE_ORDERS)}, not "
                   f"{str(design['source_order'])[:40]!r}", column="design.source_order")
    for key in DESIGN_KEYS - {"source_order"}:
        if key in design and (not isinstance(design[key], int) or isinstance(design[key], bool)
                              or (key != "seed" and design[key] < 0)):
            errors.add(f"{key} must be a non-negative integer", column=f"design.{key}")
    if design.get("annotators_per_item", 1) == 0:
        errors.add("annotators_per_item must be at least 1", column="design.annotators_per_item")
    if "duplicate_min_gap" in design and isinstance(design["duplicate_min_gap"], int) \
            and design["duplicate_min_gap"] < 2:
        errors.add("duplicate_min_gap must be at least 2 (a repeat is never adjacent)",
                   column="design.duplicate_min_gap")
    return design


def _analysis(analysis: Any, errors: Collector) -> AnalysisSettings:
    """Check the `analysis` table with the one settings validator; return the settings (the
    defaults when it has problems)."""
    if not isinstance(analysis, dict):
        errors.add("'analysis' must be a table", column="analysis")
        analysis = {}
    try:
        return AnalysisSettings.from_mapping(analysis)
    except SettingsError as exc:
        for problem in exc.problems:
            errors.add(problem.message, column=f"analysis.{problem.column}")
        return AnalysisSettings()


def _quality(quality: Any, errors: Collector) -> dict[str, Any]:
    """Validate the screening pass mark and the attention-check policy (the `quality` table)."""
    if not isinstance(quality, dict):
        errors.add("'quality' must be a table", column="quality")
        return {}
    for key in sorted(set(quality) - QUALITY_KEYS):
        errors.add(f"unknown key {key!r} (expected {', '.join(sorted(QUALITY_KEYS))})",
                   column=f"quality.{key}")
    share = quality.get("screening_pass_share")
    if share is not None and (isinstance(share, bool) or not isinstance(share, (int, float))
                              or not 0 < share <= 1):
        errors.add("screening_pass_share is a share of the screening items: more than 0, "
                   "at most 1", column="quality.screening_pass_share")
    for key in ("screening_pass_count", "check_warn_after", "check_stop_after"):
        value = quality.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < 0 or value > 10_000):
            errors.add(f"{key} must be a whole number from 0 to 10000", column=f"quality.{key}")
    if "screening_pass_share" in quality and "screening_pass_count" in quality:
        errors.add("give screening_pass_share or screening_pass_count, not both",
                   column="quality.screening_pass_count")
    url = quality.get("screened_out_url", "")
    if not isinstance(url, str) or (url and not re.fullmatch(r"https?://\S{1,500}", url)):
        errors.add("screened_out_url is an http(s) address", column="quality.screened_out_url")
    return {key: quality[key] for key in QUALITY_KEYS if key in quality}


def _scale(scale: Any, path: str, errors: Collector) -> dict[str, Any]:
    """Validate one question's scale (a scale preset's name or a custom scale table)."""
    if isinstance(scale, str):
        scale = {"preset": scale}
    if not isinstance(scale, dict):
        errors.add("a scale is a preset name or a table with values/labels/reductions",
                   column=path)
        return {}
    for key in sorted(set(scale) - SCALE_KEYS):
        errors.add(f"unknown key {key!r}", column=f"{path}.{key}")
    if "preset" in scale:
        if scale["preset"] not in scale_preset_names():
            errors.add(f"unknown scale preset {scale['preset']!r} (choose "
                       f"{', '.join(scale_preset_names())})", column=f"{path}.preset")
        return scale
    values = scale.get("values")
    if not isinstance(values, list) or len(values) < 2 or not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in values
    ):
        errors.add("a custom scale needs 'values': a list of at least two numbers",
                   column=f"{path}.values")
    elif len(set(values)) != len(values):
        errors.add("scale values must be distinct", column=f"{path}.values")
    if scale.get("display", "text") not in DISPLAYS:
        errors.add(f"{path}.display must be text, pair or coref", column=f"{path}.display")
    reductions = scale.get("reductions") or {}
    if not isinstance(reductions, dict):
        errors.add("reductions is a table of named mappings", column=f"{path}.reductions")
        reductions = {}
    for name, mapping in reductions.items():
        if not isinstance(mapping, dict):
            errors.add("a reduction maps each value to a code", column=f"{path}.reductions.{name}")
            continue
        keys = {str(k) for k in mapping}
        wanted = {_key(v) for v in values} if isinstance(values, list) else set()
        if wanted and keys != wanted:
            errors.add(f"reduction {name!r} must map exactly the scale's values "
                       f"(missing {sorted(wanted - keys)}, extra {sorted(keys - wanted)})",
                       column=f"{path}.reductions.{name}")
        if not all(isinstance(c, (int, float)) and not isinstance(c, bool)
                   for c in mapping.values()):
            errors.add("reduction codes must be numbers", column=f"{path}.reductions.{name}")
    return scale


def _questions(questions: Any, errors: Collector) -> list[dict[str, Any]]:
    """Validate the list of questions: keys unique slugs, each with a scale."""
    if not isinstance(questions, list) or not questions:
        errors.add("'questions' is a non-empty list of question tables", column="questions")
        return []
    if len(questions) > MAX_QUESTIONS:
        errors.add(f"at most {MAX_QUESTIONS} questions per item, not {len(questions)}",
                   column="questions")
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for n, question in enumerate(questions[:MAX_QUESTIONS]):
        path = f"questions[{n}]"
        if not isinstance(question, dict):
            errors.add("each question is a table", column=path)
            continue
        for key in sorted(set(question) - QUESTION_KEYS):
            errors.add(f"unknown key {key!r}", column=f"{path}.{key}")
        key = question.get("key")
        if not isinstance(key, str) or not QUESTION_KEY.fullmatch(key):
            errors.add("'key' is required: lower-case letters, digits, '-' or '_', starting with "
                       "a letter, at most 40 characters", column=f"{path}.key")
        elif key in seen:
            errors.add(f"key {key!r} is used by an earlier question", column=f"{path}.key")
        else:
            seen.add(key)
        prompt = question.get("prompt", "")
        if not isinstance(prompt, str) or len(prompt) > 500:
            errors.add("prompt is a string of at most 500 characters", column=f"{path}.prompt")
        if "rubric" in question and not isinstance(question["rubric"], str):
            errors.add("rubric is a (Markdown) string", column=f"{path}.rubric")
        for flag in ("required", "comment", "cant_judge"):
            if flag in question and not isinstance(question[flag], bool):
                errors.add(f"{flag} is true or false", column=f"{path}.{flag}")
        kind = question.get("kind", "scale")
        if kind not in QUESTION_KINDS:
            errors.add(f"kind must be one of {', '.join(QUESTION_KINDS)}, not {str(kind)[:40]!r}",
                       column=f"{path}.kind")
        elif is_comparative(kind):
            question = _comparative(question, kind, path, errors)
        elif "options" in question:
            errors.add("options belong to a comparative question (kind pairwise, ranking or "
                       "bws); a scale question has a scale", column=f"{path}.options")
        elif "scale" not in question:
            errors.add("'scale' is required: a scale preset name or a table",
                       column=f"{path}.scale")
        else:
            question = {**question, "scale": _scale(question["scale"], f"{path}.scale", errors)}
        out.append(question)
    return out


def _comparative(question: dict[str, Any], kind: str, path: str,
                 errors: Collector) -> dict[str, Any]:
    """Check a comparative question's options (`core.comparative.options_clean`, each problem
    at the option it names) and that it has no scale; return it with its options completed."""
    if "scale" in question:
        errors.add(f"a {kind} question has no scale (its options are in 'options')",
                   column=f"{path}.scale")
    raw = question.get("options", {})
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        errors.add("options is a table (ties, strength, size)", column=f"{path}.options")
        return question
    options: dict[str, Any] = {}
    problems = False
    for name, value in raw.items():  # one at a time, so that each problem names its option
        try:
            options.update({name: options_clean(kind, {name: value})[name]})
        except JudgmentError as exc:
            errors.add(str(exc), column=f"{path}.options.{name}")
            problems = True
    if problems:
        return question
    return {**question, "kind": kind, "options": options_clean(kind, options)}


def _key(value: float) -> str:
    number = float(value)
    return str(int(number)) if number.is_integer() else repr(number)
