"""The choices of the systems analysis's settings (`core.stats.systems`), apart from it: the
settings (`core.settings`) list them, and every command that reads settings would otherwise
import scipy's statistics at start-up (0.6 s) for three tuples of names."""

from __future__ import annotations

from typing import Literal

Resampling = Literal["sources", "sources_and_annotators"]
TestName = Literal["permutation", "wilcoxon"]
Correction = Literal["holm", "bonferroni", "none"]
RESAMPLINGS: tuple[str, ...] = ("sources", "sources_and_annotators")
TESTS: tuple[str, ...] = ("permutation", "wilcoxon")
CORRECTIONS: tuple[str, ...] = ("holm", "bonferroni", "none")
