"""Similarity metrics equal their libraries' own results; bleu1 and overlap worked by hand."""

import math

import pytest
import sacrebleu
from hypothesis import given, settings
from hypothesis import strategies as st
from rouge_score import rouge_scorer

from core.metrics.similarity import (
    SIMILARITY_METRICS,
    bleu1,
    overlap,
    similarity_metrics,
    similarity_metrics_many,
)

A = "The quick brown fox jumps over the lazy dog."
B = "A quick brown dog jumps over the lazy foxes."


def test_it_returns_exactly_the_contract_metric_names():
    assert list(similarity_metrics(A, B)) == list(SIMILARITY_METRICS)


def test_it_takes_bleu_and_chrf_from_sacrebleu_divided_by_100():
    got = similarity_metrics(A, B)
    assert got["bleu"] == sacrebleu.sentence_bleu(B, [A]).score / 100
    assert got["chrf"] == sacrebleu.sentence_chrf(B, [A]).score / 100


def test_it_takes_rouge_f_measures_from_rouge_score_without_stemming():
    expected = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=False).score(A, B)
    got = similarity_metrics(A, B)
    for name in ("rouge1", "rouge2", "rougeL"):
        assert got[name] == expected[name].fmeasure


def test_it_computes_bleu1_by_hand():
    # 4 hypothesis tokens, clipped matches: the 2 + cat 1 = 3; brevity penalty exp(1 - 6/4).
    assert bleu1("the cat sat on the mat", "the cat the cat") == pytest.approx(
        0.75 * math.exp(-0.5), abs=1e-12)


def test_it_gives_no_brevity_penalty_to_a_longer_hypothesis():
    assert bleu1("a b", "a b c d") == pytest.approx(2 / 4, abs=1e-12)


def test_it_gives_bleu1_zero_for_an_empty_hypothesis():
    assert bleu1("a b", "") == 0.0


def test_it_computes_overlap_as_the_jaccard_index_of_token_sets():
    # {the, cat, sat} vs {the, cat, ran, away}: 2 shared of 5.
    assert overlap("the cat sat the", "the cat ran away") == pytest.approx(2 / 5)
    assert overlap("", " ") == 0.0


def test_it_gives_one_for_identical_sentences():
    got = similarity_metrics(A, A)
    assert all(v == pytest.approx(1.0) for v in got.values())


def test_it_scores_a_batch_like_single_pairs():
    pairs = [(A, B), (B, A), (A, B), ("", "x")]
    assert similarity_metrics_many(pairs) == [similarity_metrics(a, b) for a, b in pairs]


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=40), st.text(max_size=40))
def test_it_keeps_every_metric_within_zero_and_one(a, b):
    assert all(0.0 <= v <= 1.0 for v in similarity_metrics(a, b).values())
