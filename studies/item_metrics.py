"""Automatic metrics of sentence-pair items, computed on import (Solomon et al. 2021, §5.2).

`pair_rows_score` fills parsed item rows in place before they are stored:

- `metrics`: `bleu, chrf, rouge1, rouge2, rougeL, overlap, bleu1` of `text_a` (reference) and
  `text_b` (hypothesis), from `core.metrics.similarity.similarity_metrics_many`. An imported
  `metric:<name>` column with one of these names wins: it is kept as imported.
- `meta`: `sentiment_a` / `sentiment_b`, VADER's compound score of each text, computed once per
  distinct sentence over the whole batch, and `sentiment_source` = "vader". When the row
  imported both `meta:sentiment_a` and `meta:sentiment_b` they are kept and the source is
  "imported". Importing only one of the two, or a value that is not a number, is a problem.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from core.items import ItemRow
from core.metrics.sentiment import Analyser, SentimentScorer
from core.metrics.similarity import SIMILARITY_METRICS, similarity_metrics_many
from core.problems import Problem

SENTIMENT_KEYS = ("sentiment_a", "sentiment_b")


def sentiment_problems(rows: Sequence[ItemRow], *, filename: str) -> list[Problem]:
    """Return the problems of imported sentiment columns (one of the two, or not a number)."""
    problems = []
    for row in rows:
        present = [k for k in SENTIMENT_KEYS if k in row.meta]
        if len(present) == 1:
            missing = next(k for k in SENTIMENT_KEYS if k not in row.meta)
            problems.append(Problem(filename, row.line, f"meta:{missing}",
                                    f"meta:{present[0]} is given, so meta:{missing} is needed too"))
        for key in present:
            try:
                ok = math.isfinite(float(row.meta[key]))
            except ValueError:
                ok = False
            if not ok:
                problems.append(Problem(filename, row.line, f"meta:{key}",
                                        f"{row.meta[key]!r} is not a number"))
    return problems


def pair_rows_score(rows: Sequence[ItemRow], *, analyser: Analyser | None = None) -> None:
    """Fill the similarity metrics and sentiment of pair rows in place (imported values win).

    Call `sentiment_problems` first: rows are expected to import both sentiments or neither.
    """
    todo = [row for row in rows if not all(name in row.metrics for name in SIMILARITY_METRICS)]
    scores = similarity_metrics_many((row.text_a, row.text_b) for row in todo)
    for row, computed in zip(todo, scores, strict=True):
        row.metrics = {**computed, **row.metrics}
    scorer = SentimentScorer(analyser)  # caches: each distinct sentence is scored once
    for row in rows:
        if all(k in row.meta for k in SENTIMENT_KEYS):
            row.meta["sentiment_source"] = "imported"
        else:
            row.meta["sentiment_a"] = scorer.score(row.text_a)
            row.meta["sentiment_b"] = scorer.score(row.text_b)
            row.meta["sentiment_source"] = "vader"
