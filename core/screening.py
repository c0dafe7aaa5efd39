"""Screening and known-answer items: whether an answer is right, whether an annotator passes.

A screening or attention-check item carries a known answer per question (``gold``) and a
tolerance per question (a distance on the question's raw scale, 0 when not given). An item is
answered correctly when every question with a known answer got a value within its tolerance (a
missing value or "can't judge" is not correct). A screening is passed with at least
``pass_count`` correct items or, without a count, at least ``pass_share`` of them (Dobrovolskii
et al., 2022, admit annotators after a qualification set whose answers are known).
"""

from __future__ import annotations

import math
from collections.abc import Mapping


def item_correct(gold: Mapping[str, float], tolerance: Mapping[str, float],
                 answers: Mapping[str, float | None]) -> bool:
    """Whether ``answers`` ({question key: value or None}) match every known answer."""
    for key, known in gold.items():
        value = answers.get(key)
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return False
        if abs(float(value) - float(known)) > float(tolerance.get(key, 0.0)) + 1e-9:
            return False
    return True


def screening_passed(correct: int, total: int, *, pass_share: float,
                     pass_count: int | None) -> bool:
    """Whether ``correct`` of ``total`` screening items reach the pass mark."""
    if pass_count is not None:
        return correct >= min(pass_count, total)
    return total == 0 or correct >= math.ceil(pass_share * total - 1e-9)
