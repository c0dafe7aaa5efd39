"""LLM judges kept apart from the people: who they are and what they answered (pure, no Django).

`JudgeInfo` describes one judge of a study, `JudgeAnswers` one run of one judge on one question
(docs/judges.md); the analysis reads them (`core.results.judges`), never as annotators.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from core.stats._types import FloatArray


@dataclass(frozen=True)
class JudgeInfo:
    """One judge of a study: its name (unique per study) and what produced its answers."""

    name: str
    model: str = ""
    prompt: str = ""  # the prompt text or its version label
    version: str = ""
    date: str = ""  # ISO date as given ("" = unknown)
    temperature: float | None = None
    notes: str = ""


@dataclass(frozen=True)
class JudgeAnswers:
    """One run of one judge on one question.

    ``item_ids``: the items' external ids (a comparison's id for a comparative question);
    ``value``: scale questions the raw answer on the question's scale (nan = no answer),
    comparative ones the canonical value of `core.comparative`; ``choices``: comparative only,
    the stored judgment form (with ``shown``), one per item id; ``rationale``: optional, one
    per item.
    """

    judge: str
    run: str
    question: str
    item_ids: tuple[str, ...]
    value: FloatArray
    choices: tuple[Mapping[str, Any], ...] = ()
    rationale: tuple[str, ...] = ()
