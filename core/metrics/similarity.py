"""Similarity metrics for one sentence pair, `text_a` the reference and `text_b` the hypothesis.

All values lie in [0, 1] (Solomon et al. 2021, §5.2):

- `bleu`: sacrebleu's `sentence_bleu(text_b, [text_a])` score / 100 (its defaults: 13a
  tokenisation, exponential smoothing, effective order);
- `chrf`: sacrebleu's `sentence_chrf(text_b, [text_a])` score / 100 (character 6-grams, β = 2);
- `rouge1`, `rouge2`, `rougeL`: rouge-score F-measures, *without stemming* (Solomon et al.
  used an unstemmed ROUGE) and with rouge-score's default tokeniser, which lowercases and keeps
  only ASCII letters and digits — text in another script scores 0 (use chrF there);
- `overlap`: Jaccard index of the sets of whitespace tokens, |A ∩ B| / |A ∪ B|, case-sensitive, as
  Solomon et al.'s published code computes "word overlap" (0 when both texts are blank);
- `bleu1`: unigram BLEU on whitespace tokens, clipped unigram precision × brevity penalty
  (Concord's definition, shared with the sentiment heuristic: docs/statistics/heuristics.md).

Worked example: text_a = "the cat sat on the mat", text_b = "the cat the cat" → bleu1: the
hypothesis has 4 tokens, clipped matches the: min(2, 2) + cat: min(2, 1) = 3, precision 3/4,
brevity penalty exp(1 − 6/4), so bleu1 = 0.75·e^(−0.5) ≈ 0.4549.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable

SIMILARITY_METRICS = ("bleu", "chrf", "rouge1", "rouge2", "rougeL", "overlap", "bleu1")
_ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")


def _unit(value: float) -> float:
    """Clamp to [0, 1]: library scores / 100 can overshoot by one ulp."""
    return min(1.0, max(0.0, float(value)))


def bleu1(reference: str, hypothesis: str) -> float:
    """Return unigram BLEU: clipped unigram precision × brevity penalty, whitespace tokens.

    precision = Σ_w min(count_hyp(w), count_ref(w)) / |hyp|; brevity penalty = 1 if |hyp| >
    |ref| else exp(1 − |ref|/|hyp|). 0 for an empty hypothesis. Equal to NLTK's
    `sentence_bleu([ref], hyp, weights=(1, 0, 0, 0))` used by Solomon et al.'s code.
    """
    ref = reference.split()
    hyp = hypothesis.split()
    if not hyp:
        return 0.0
    ref_counts = Counter(ref)
    clipped = sum(min(c, ref_counts[w]) for w, c in Counter(hyp).items())
    if clipped == 0:
        return 0.0
    precision = clipped / len(hyp)
    bp = 1.0 if len(hyp) > len(ref) else math.exp(1 - len(ref) / len(hyp))
    return _unit(precision * bp)


def overlap(text_a: str, text_b: str) -> float:
    """Return |A ∩ B| / |A ∪ B| for the sets of whitespace tokens (0 when both are blank)."""
    a, b = set(text_a.split()), set(text_b.split())
    union = a | b
    return len(a & b) / len(union) if union else 0.0


class SimilarityScorer:
    """Compute SIMILARITY_METRICS for many pairs, reusing one ROUGE scorer."""

    def __init__(self) -> None:
        # Imported here: sacrebleu and rouge-score (with nltk) take a third of a second to import,
        # and this module is imported by every web process, which never scores a pair.
        from rouge_score import rouge_scorer

        self._rouge = rouge_scorer.RougeScorer(list(_ROUGE_TYPES), use_stemmer=False)

    def score(self, text_a: str, text_b: str) -> dict[str, float]:
        """Return the metrics of one pair (text_a reference, text_b hypothesis)."""
        import sacrebleu

        rouge = self._rouge.score(text_a, text_b)  # (target, prediction)
        return {
            "bleu": _unit(sacrebleu.sentence_bleu(text_b, [text_a]).score / 100),
            "chrf": _unit(sacrebleu.sentence_chrf(text_b, [text_a]).score / 100),
            "rouge1": _unit(rouge["rouge1"].fmeasure),
            "rouge2": _unit(rouge["rouge2"].fmeasure),
            "rougeL": _unit(rouge["rougeL"].fmeasure),
            "overlap": overlap(text_a, text_b),
            "bleu1": bleu1(text_a, text_b),
        }


def similarity_metrics(text_a: str, text_b: str) -> dict[str, float]:
    """Return SIMILARITY_METRICS for one pair (text_a reference, text_b hypothesis)."""
    return SimilarityScorer().score(text_a, text_b)


def similarity_metrics_many(pairs: Iterable[tuple[str, str]]) -> list[dict[str, float]]:
    """Return SIMILARITY_METRICS for each (text_a, text_b) pair, in order.

    A pair seen twice is computed once.
    """
    scorer = SimilarityScorer()
    cache: dict[tuple[str, str], dict[str, float]] = {}
    out = []
    for text_a, text_b in pairs:
        key = (text_a, text_b)
        if key not in cache:
            cache[key] = scorer.score(text_a, text_b)
        out.append(dict(cache[key]))
    return out
