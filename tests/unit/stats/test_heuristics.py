"""Filtering heuristics and annotator styles (Solomon et al. 2021, §5.1, §5.2 and table 2)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.stats._types import LongRatings
from core.stats.heuristics import (
    RULES,
    annotator_styles,
    disagreeable_annotators,
    high_random_annotators,
    low_variance_annotators,
    run_heuristics,
    sentiment_annotators,
    slow_annotators,
)
from core.stats.scales import PRESETS, reduce_values

nan = np.nan
REDUCED = PRESETS["similarity-1-5"]["reductions"]["reduced"]


def record(result, annotator):
    return result.records[annotator]


# --------------------------------------------------------------------------- slow


def test_it_flags_an_annotator_whose_mean_active_time_exceeds_300_seconds():
    ratings = LongRatings(
        item=np.array([0, 1, 0, 1]), annotator=np.array([0, 0, 1, 1]),
        value=np.array([1.0, 2.0, 3.0, 4.0]), n_items=2, n_annotators=2,
    )  # fmt: skip
    result = slow_annotators(ratings, np.array([200_000, 500_000, 100_000, 300_000.0]))
    assert record(result, 0).value == pytest.approx(350.0)
    assert record(result, 0).flagged
    assert record(result, 1).value == pytest.approx(200.0)
    assert not record(result, 1).flagged
    assert result.flagged == (0,)
    assert result.params == {"threshold_s": 300.0}


def test_it_does_not_flag_a_mean_of_exactly_300_seconds():
    result = slow_annotators(np.array([[1.0, 2.0]]), np.array([[300_000.0, 300_000.0]]))
    assert record(result, 0).value == 300.0 and not record(result, 0).flagged


def test_it_returns_none_for_an_annotator_without_durations():
    result = slow_annotators(np.array([[1.0], [2.0]]), np.array([[10_000.0], [nan]]))
    assert record(result, 1).value is None and not record(result, 1).flagged
    assert "no active time" in record(result, 1).reason
    assert record(result, 1).to_record()["reason"] == record(result, 1).reason


def test_it_rejects_negative_durations():
    with pytest.raises(ValueError, match="duration_ms"):
        slow_annotators(np.array([[1.0]]), np.array([[-1.0]]))


# --------------------------------------------------------------------------- low variance


def test_it_flags_an_annotator_whose_label_std_is_below_one():
    dense = np.array([[3, 3, 3, 4.0], [1, 5, 1, 5.0]])
    result = low_variance_annotators(dense)
    assert record(result, 0).value == pytest.approx(np.std([3, 3, 3, 4], ddof=1))
    assert result.flagged == (0,)


def test_it_does_not_flag_a_std_of_exactly_one():
    result = low_variance_annotators(np.array([[1.0, 2.0, 3.0]]))
    assert record(result, 0).value == pytest.approx(1.0) and not record(result, 0).flagged


def test_it_needs_two_labels_for_the_variance():
    result = low_variance_annotators(np.array([[3.0, nan], [1.0, 2.0]]))
    assert record(result, 0).value is None and "fewer than 2" in record(result, 0).reason


# --------------------------------------------------------------------------- high random


def test_it_flags_an_annotator_who_rates_controls_higher_than_other_items():
    dense = np.array([[4, 5, 3, 4.0], [1, 2, 3, 4.0]])
    result = high_random_annotators(dense, np.array([True, True, False, False]))
    assert record(result, 0).value == pytest.approx(1.0)
    assert record(result, 1).value == pytest.approx(-2.0)
    assert result.flagged == (0,)


def test_it_flags_high_random_only_above_its_threshold():
    dense = np.array([[4, 5, 3, 4.0], [5, 5, 3, 3.0]])
    result = high_random_annotators(dense, np.array([True, True, False, False]), threshold=1.5)
    assert result.flagged == (1,) and result.params == {"threshold": 1.5, "min_ratings": 2}
    assert {r.threshold for r in result.records} == {1.5}


def test_it_needs_two_control_ratings_for_high_random():
    dense = np.array([[5, 3, 4, 4.0]])
    result = high_random_annotators(dense, np.array([True, False, False, False]))
    assert record(result, 0).value is None
    assert "control" in record(result, 0).reason


def test_it_rejects_a_control_mask_of_the_wrong_length():
    with pytest.raises(ValueError, match="control"):
        high_random_annotators(np.array([[1.0, 2.0]]), np.array([True]))


# --------------------------------------------------------------------------- disagreeable


def test_it_flags_an_annotator_against_unanimous_other_raters_more_than_half_the_time():
    # Reduced codes; annotator 0 contradicts the unanimous other two on 3 of 4 items.
    dense = np.array(
        [
            [1, 1, -1, 0.0],
            [-1, 0, 1, 0.0],
            [-1, 0, 1, 0.0],
        ]
    )
    result = disagreeable_annotators(dense)
    assert record(result, 0).value == pytest.approx(0.75) and record(result, 0).flagged
    # Annotators 1 and 2 see unanimous others only on item 3: fewer than 3 such items.
    assert record(result, 1).value is None and "fewer than 3" in record(result, 1).reason
    assert result.flagged == (0,)


def test_it_does_not_flag_exactly_half():
    dense = np.array([[1, 1, 0, 0.0], [0, 0, 0, 0.0], [0, 0, 0, 0.0]])
    assert record(disagreeable_annotators(dense), 0).value == 0.5
    assert disagreeable_annotators(dense).flagged == ()


def test_it_needs_two_other_raters_for_a_unanimous_decision():
    # Items rated by two annotators only: the single other rater is no unanimous decision.
    dense = np.array([[1, 1, 1, 1.0], [-1, -1, -1, -1.0]])
    result = disagreeable_annotators(dense)
    assert all(r.value is None for r in result.records)


def test_it_counts_four_raters_when_the_other_three_agree():
    dense = np.array([[1, 1, 1.0], [0, 0, 0.0], [0, 0, 0.0], [0, 0, 0.0]])
    assert record(disagreeable_annotators(dense), 0).value == 1.0


def disagreeable_by_loops(dense):
    """Brute-force reading of heuristic 4 used as an oracle."""
    n_a, n_i = dense.shape
    out = []
    for j in range(n_a):
        eligible = differ = 0
        for i in range(n_i):
            if np.isnan(dense[j, i]):
                continue
            others = [dense[o, i] for o in range(n_a) if o != j and not np.isnan(dense[o, i])]
            if len(others) >= 2 and len(set(others)) == 1:
                eligible += 1
                differ += dense[j, i] != others[0]
        out.append(differ / eligible if eligible >= 3 else None)
    return out


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.lists(st.sampled_from([-1.0, 0.0, 1.0, nan]), min_size=8, max_size=8),
        min_size=2,
        max_size=5,
    )
)
def test_it_matches_a_loop_implementation_of_the_disagreeable_rule(rows):
    dense = np.array(rows)
    got = [r.value for r in disagreeable_annotators(dense).records]
    assert got == pytest.approx(disagreeable_by_loops(dense))


# --------------------------------------------------------------------------- sentiment


def sentiment_inputs():
    # Items 0–2 qualify (BLEU > 0.8, |Δ sentiment| ≥ 1.9); item 3 has Δ 1.5; item 4 low BLEU.
    bleu1 = np.array([0.9, 0.85, 0.95, 0.9, 0.5])
    sa = np.array([0.95, 0.97, -0.96, 0.75, 0.99])
    sb = np.array([-0.96, -0.95, 0.99, -0.75, -0.99])
    dense = np.array(
        [
            [1, 5, 1, 5, 5.0],  # on qualifying pairs 1, 5, 1: std 2.31 → flagged
            [3, 4, 3, 1, 1.0],  # 3, 4, 3: std 0.58
            [2, nan, nan, 2, 2.0],  # one qualifying pair only
        ]
    )
    return dense, bleu1, sa, sb


def test_it_flags_an_annotator_whose_labels_vary_on_near_identical_opposite_sentiment_pairs():
    dense, bleu1, sa, sb = sentiment_inputs()
    result = sentiment_annotators(dense, bleu1=bleu1, sentiment_a=sa, sentiment_b=sb)
    assert record(result, 0).value == pytest.approx(np.std([1, 5, 1], ddof=1))
    assert record(result, 1).value == pytest.approx(np.std([3, 4, 3], ddof=1))
    assert record(result, 2).value is None and "fewer than 2" in record(result, 2).reason
    assert result.flagged == (0,)
    assert result.params["sentiment_threshold"] == 1.9 and result.params["n_pairs"] == 3


def test_it_lowers_the_sentiment_threshold_to_one_with_vader():
    dense, bleu1, sa, sb = sentiment_inputs()
    result = sentiment_annotators(
        dense, bleu1=bleu1, sentiment_a=sa, sentiment_b=sb, sentiment_source="vader"
    )
    assert result.params["sentiment_threshold"] == 1.0 and result.params["n_pairs"] == 4
    assert record(result, 1).value == pytest.approx(np.std([3, 4, 3, 1], ddof=1))
    assert record(result, 1).flagged
    assert record(result, 2).value == 0.0


def test_it_records_an_explicit_sentiment_threshold():
    dense, bleu1, sa, sb = sentiment_inputs()
    result = sentiment_annotators(
        dense, bleu1=bleu1, sentiment_a=sa, sentiment_b=sb, sentiment_threshold=1.95
    )
    assert result.params["sentiment_threshold"] == 1.95 and result.params["n_pairs"] == 1


def test_it_rejects_an_unknown_sentiment_source():
    dense, bleu1, sa, sb = sentiment_inputs()
    with pytest.raises(ValueError, match="sentiment_source"):
        sentiment_annotators(dense, bleu1=bleu1, sentiment_a=sa, sentiment_b=sb, sentiment_source="x")


# --------------------------------------------------------------------------- all rules together


def planted_crowd():
    """Six annotators rate all 60 items; A1–A5 each planted for exactly one rule.

    Items 0–49 have truth (i mod 5) + 1; items 50–59 are controls (truth 1); items 2, 7, 12,
    17 (truth 3) are near-identical pairs of opposite sentiment.
    """
    n = 60
    truth = np.where(np.arange(n) < 50, np.arange(n) % 5 + 1, 1).astype(float)
    control = np.arange(n) >= 50
    sentiment_items = np.array([2, 7, 12, 17])
    dense = np.tile(truth, (6, 1))
    dense[2] = np.select([truth <= 2, truth == 3], [2.0, 3.0], 4.0)  # low variance, same reductions
    # High random: 6 of the 10 controls rated 5 (mean 3.4 > 3.0 elsewhere); rating all of them
    # 5 would also contradict the unanimous others on 10 of the 16 items where they agree.
    dense[3, 50:56] = 5.0
    dense[4] = np.where(control, 1.0, 6 - truth)  # disagreeable (not on controls)
    dense[5, sentiment_items] = [1.0, 5.0, 1.0, 5.0]  # sentimentally dis-aligned
    durations = np.full(dense.shape, 10_000.0)
    durations[1] = 400_000.0  # slow
    bleu1 = np.full(n, 0.3)
    bleu1[sentiment_items] = 0.9
    sa = np.zeros(n)
    sb = np.zeros(n)
    sa[sentiment_items], sb[sentiment_items] = 0.95, -0.96
    return dense, durations, control, bleu1, sa, sb


def test_it_flags_exactly_the_planted_annotator_of_each_rule():
    dense, durations, control, bleu1, sa, sb = planted_crowd()
    results = run_heuristics(
        dense,
        reduced=reduce_values(dense, REDUCED),
        duration_ms=durations,
        control=control,
        bleu1=bleu1,
        sentiment_a=sa,
        sentiment_b=sb,
    )
    assert tuple(results) == RULES
    assert {rule: res.flagged for rule, res in results.items()} == {
        "slow": (1,),
        "low_variance": (2,),
        "high_random": (3,),
        "disagreeable": (4,),
        "sentiment": (5,),
    }


def test_run_heuristics_passes_each_rules_parameters_to_it():
    dense, durations, control, bleu1, sa, sb = planted_crowd()
    params = {"slow": {"threshold_s": 500.0}, "low_variance": {"threshold": 0.1, "min_ratings": 3},
              "high_random": {"threshold": 5.0, "min_ratings": 1},
              "disagreeable": {"min_other_raters": 1, "min_items": 2, "threshold": 0.9},
              "sentiment": {"sentiment_threshold": 1.5, "bleu_threshold": 0.5,
                            "std_threshold": 3.0, "min_pairs": 3}}
    results = run_heuristics(dense, reduced=reduce_values(dense, REDUCED), duration_ms=durations,
                             control=control, bleu1=bleu1, sentiment_a=sa, sentiment_b=sb,
                             params=params)
    for rule, passed in params.items():
        assert passed.items() <= results[rule].params.items(), rule
    assert all(not r.flagged for r in results.values())  # every planted annotator is under them


def test_run_heuristics_rejects_parameters_of_an_unknown_rule():
    with pytest.raises(ValueError, match="unknown rule"):
        run_heuristics(np.array([[1.0, 2.0]]), params={"sloow": {"threshold_s": 1.0}})


def test_it_gives_the_same_records_for_dense_and_long_input():
    dense, durations, control, *_ = planted_crowd()
    long = LongRatings.from_dense(dense)
    assert low_variance_annotators(dense) == low_variance_annotators(long)
    assert high_random_annotators(dense, control) == high_random_annotators(long, control)
    assert slow_annotators(dense, durations) == slow_annotators(
        long, durations[long.annotator, long.item]
    )


def test_it_returns_the_record_shape_of_product_md():
    rec = low_variance_annotators(np.array([[1.0, 1.0]])).records[0].to_record()
    assert rec == {"rule": "low_variance", "annotator": 0, "value": 0.0, "threshold": 1.0, "flagged": True}


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.lists(st.sampled_from([1.0, 2.0, 3.0, 4.0, 5.0, nan]), min_size=7, max_size=7),
        min_size=3,
        max_size=5,
    ),
    st.randoms(use_true_random=False),
)
def test_it_permutes_records_with_the_annotators_and_ignores_item_order(rows, rnd):
    dense = np.array(rows)
    control = np.array([True, True, False, False, False, True, False])
    a = list(range(dense.shape[0]))
    i = list(range(dense.shape[1]))
    rnd.shuffle(a)
    rnd.shuffle(i)
    shuffled = dense[np.ix_(a, i)]
    for fn, args_before, args_after in [
        (low_variance_annotators, (dense,), (shuffled,)),
        (high_random_annotators, (dense, control), (shuffled, control[i])),
        (disagreeable_annotators, (reduce_values(dense, REDUCED),), (reduce_values(shuffled, REDUCED),)),
    ]:
        before = fn(*args_before).records
        after = fn(*args_after).records
        for new_pos, old in enumerate(a):
            x, y = before[old], after[new_pos]
            assert (x.flagged, x.reason, x.n) == (y.flagged, y.reason, y.n)
            assert (x.value is None and y.value is None) or x.value == pytest.approx(y.value)


# --------------------------------------------------------------------------- styles


def test_it_classifies_radical_centrist_and_neither_annotators():
    dense = np.array(
        [
            [1, 5, 5, 3.0],  # extreme 3/4 → radical
            [2, 4, 2, 1.0],  # moderate 3/4 → centrist
            [2, 4, 3, 3.0],  # moderate exactly 1/2 → neither
            [nan, nan, nan, nan],
        ]
    )
    result = annotator_styles(dense)
    styles = [(r.style, r.extreme_share, r.moderate_share) for r in result.records]
    assert styles == [
        ("radical", 0.75, 0.0),
        ("centrist", 0.25, 0.75),
        ("neither", 0.0, 0.5),
        ("neither", None, None),
    ]
    assert result.records[3].reason == "no labels"
    assert result.annotators("radical") == (0,) and result.annotators("centrist") == (1,)


def test_it_can_ignore_the_label_3_as_the_paper_did():
    dense = np.array([[2, 4, 3, 3.0]])
    assert annotator_styles(dense).records[0].style == "neither"
    ignored = annotator_styles(dense, ignored=(3,))
    assert ignored.records[0].style == "centrist" and ignored.records[0].moderate_share == 1.0
    assert ignored.params["ignored"] == [3.0]


def test_it_returns_the_style_record_shape_of_product_md():
    rec = annotator_styles(np.array([[1.0, 5.0]])).records[0].to_record()
    assert rec == {"annotator": 0, "style": "radical", "extreme_share": 1.0, "moderate_share": 0.0}
