"""Sentiment of sentences for the sentiment heuristic: VADER's compound score in [−1, 1].

The lexicon ships with `vaderSentiment`; nothing is downloaded. Each distinct sentence is
scored once, whatever the number of pairs it appears in ("I love pizza." → 0.6369).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol


class Analyser(Protocol):
    def polarity_scores(self, text: str) -> dict[str, float]: ...


class SentimentScorer:
    """Score sentences with VADER, caching each distinct sentence.

    `analyser` defaults to `vaderSentiment`'s SentimentIntensityAnalyzer, built on first use
    (loading the lexicon takes a moment).
    """

    def __init__(self, analyser: Analyser | None = None) -> None:
        self._analyser = analyser
        self._cache: dict[str, float] = {}

    def _get_analyser(self) -> Analyser:
        if self._analyser is None:
            from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

            self._analyser = SentimentIntensityAnalyzer()
        return self._analyser

    def score(self, sentence: str) -> float:
        """Return the compound score of one sentence."""
        if sentence not in self._cache:
            self._cache[sentence] = float(self._get_analyser().polarity_scores(sentence)["compound"])
        return self._cache[sentence]

    def score_many(self, sentences: Iterable[str]) -> list[float]:
        """Return the compound score of each sentence, in order, scoring each distinct one once."""
        return [self.score(s) for s in sentences]


def sentiment_scores(
    sentences: Iterable[str], analyser: Analyser | None = None
) -> dict[str, float]:
    """Return {sentence: compound score} for the distinct sentences given."""
    scorer = SentimentScorer(analyser)
    return {s: scorer.score(s) for s in sentences}
