"""Sentiment: VADER compound score, computed once per distinct sentence."""

import pytest

from core.metrics.sentiment import SentimentScorer, sentiment_scores


class CountingAnalyser:
    def __init__(self):
        self.calls = []

    def polarity_scores(self, text):
        self.calls.append(text)
        return {"compound": len(text) / 100}


def test_it_scores_each_distinct_sentence_once():
    analyser = CountingAnalyser()
    scorer = SentimentScorer(analyser)
    got = scorer.score_many(["I love it.", "I hate it.", "I love it.", "I love it."])
    assert sorted(analyser.calls) == ["I hate it.", "I love it."]
    assert got == [0.1, 0.1, 0.1, 0.1]


def test_it_returns_one_score_per_distinct_sentence():
    analyser = CountingAnalyser()
    assert sentiment_scores(["a", "bb", "a"], analyser) == {"a": 0.01, "bb": 0.02}
    assert len(analyser.calls) == 2


def test_it_uses_vaders_compound_score_offline():
    scorer = SentimentScorer()
    assert scorer.score("I love pizza.") == pytest.approx(0.6369)
    assert scorer.score("I hate pizza.") == pytest.approx(-0.5719)
