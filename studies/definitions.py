"""Study definition files (JSON or TOML): read and validate completely, name every problem."""

from __future__ import annotations

import json
import tomllib
from pathlib import PurePath
from typing import Any

from analysis.stats.scales import LEVELS

from .presets import preset_names
from .problems import Collector

TOP_KEYS = {"slug", "title", "language", "display", "scale", "consent", "instructions", "design",
            "analysis", "completion_url", "show_gold"}
DESIGN_KEYS = {"items_per_participant", "annotators_per_item", "duplicates", "duplicate_min_gap", "seed"}
ANALYSIS_KEYS = {"level", "trust_variant", "simple_threshold"}
SCALE_KEYS = {"preset", "values", "labels", "rubric", "reductions", "display"}
DEFAULT_ANALYSIS = {"level": "ordinal", "trust_variant": "paper", "simple_threshold": 3}


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
        else:
            raw = json.loads(text)
    except json.JSONDecodeError as exc:
        errors.add(f"invalid JSON: {exc.msg}", line=exc.lineno, column=exc.colno)
        errors.raise_if_any()
    except tomllib.TOMLDecodeError as exc:
        errors.add(f"invalid TOML: {exc}")
        errors.raise_if_any()
    if not isinstance(raw, dict):
        errors.add("the definition must be an object/table")
        errors.raise_if_any()
    return validate_definition(raw, errors)


def validate_definition(raw: dict[str, Any], errors: Collector) -> dict[str, Any]:
    for key in sorted(set(raw) - TOP_KEYS):
        errors.add(f"unknown key {key!r}", column=key)
    for key in ("slug", "title"):
        if not isinstance(raw.get(key), str) or not raw.get(key, "").strip():
            errors.add(f"{key!r} is required (a non-empty string)", column=key)
    language = raw.get("language", "en")
    if language not in {"en", "fr"}:
        errors.add(f"language must be 'en' or 'fr', not {language!r}", column="language")

    scale = raw.get("scale")
    if isinstance(scale, str):
        scale = {"preset": scale}
    if not isinstance(scale, dict):
        errors.add("'scale' is required: a preset name or a table with values/labels/reductions",
                   column="scale")
        scale = {}
    for key in sorted(set(scale) - SCALE_KEYS):
        errors.add(f"unknown key {key!r}", column=f"scale.{key}")
    if "preset" in scale and scale["preset"] not in preset_names():
        errors.add(f"unknown preset {scale['preset']!r} (choose {', '.join(preset_names())})",
                   column="scale.preset")
    if "preset" not in scale:
        values = scale.get("values")
        if not isinstance(values, list) or len(values) < 2 or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in values
        ):
            errors.add("a custom scale needs 'values': a list of at least two numbers",
                       column="scale.values")
        elif len(set(values)) != len(values):
            errors.add("scale values must be distinct", column="scale.values")
        elif scale.get("display", "text") not in {"text", "pair", "coref"}:
            errors.add("scale.display must be text, pair or coref", column="scale.display")
        for name, mapping in (scale.get("reductions") or {}).items():
            if not isinstance(mapping, dict):
                errors.add("a reduction maps each value to a code", column=f"scale.reductions.{name}")
                continue
            keys = {str(k) for k in mapping}
            wanted = {_key(v) for v in values} if isinstance(values, list) else set()
            if wanted and keys != wanted:
                errors.add(f"reduction {name!r} must map exactly the scale's values "
                           f"(missing {sorted(wanted - keys)}, extra {sorted(keys - wanted)})",
                           column=f"scale.reductions.{name}")
            if not all(isinstance(c, (int, float)) and not isinstance(c, bool) for c in mapping.values()):
                errors.add("reduction codes must be numbers", column=f"scale.reductions.{name}")

    design = raw.get("design", {}) or {}
    if not isinstance(design, dict):
        errors.add("'design' must be a table", column="design")
        design = {}
    for key in sorted(set(design) - DESIGN_KEYS):
        errors.add(f"unknown key {key!r}", column=f"design.{key}")
    for key in DESIGN_KEYS:
        if key in design and (not isinstance(design[key], int) or isinstance(design[key], bool)
                              or (key != "seed" and design[key] < 0)):
            errors.add(f"{key} must be a non-negative integer", column=f"design.{key}")
    if design.get("annotators_per_item", 1) == 0:
        errors.add("annotators_per_item must be at least 1", column="design.annotators_per_item")
    if "duplicate_min_gap" in design and isinstance(design["duplicate_min_gap"], int) \
            and design["duplicate_min_gap"] < 2:
        errors.add("duplicate_min_gap must be at least 2 (a repeat is never adjacent)",
                   column="design.duplicate_min_gap")

    analysis = raw.get("analysis", {}) or {}
    if not isinstance(analysis, dict):
        errors.add("'analysis' must be a table", column="analysis")
        analysis = {}
    for key in sorted(set(analysis) - ANALYSIS_KEYS):
        errors.add(f"unknown key {key!r}", column=f"analysis.{key}")
    if analysis.get("level", "ordinal") not in LEVELS:
        errors.add(f"level must be one of {', '.join(LEVELS)}", column="analysis.level")
    if analysis.get("trust_variant", "paper") not in {"paper", "notebook"}:
        errors.add("trust_variant must be paper or notebook", column="analysis.trust_variant")
    threshold = analysis.get("simple_threshold", 3)
    if not isinstance(threshold, int) or isinstance(threshold, bool) or threshold < 1:
        errors.add("simple_threshold must be a positive integer", column="analysis.simple_threshold")
    errors.raise_if_any()
    return {
        "slug": raw["slug"].strip(),
        "title": raw["title"].strip(),
        "language": language,
        "scale": scale,
        "consent": raw.get("consent", ""),
        "instructions": raw.get("instructions", ""),
        "design": design,
        "analysis": {**DEFAULT_ANALYSIS, **analysis},
        "completion_url": raw.get("completion_url", ""),
        "show_gold": bool(raw.get("show_gold", True)),
    }


def _key(value: float) -> str:
    number = float(value)
    return str(int(number)) if number.is_integer() else repr(number)
