"""Quality rules beyond the paper's five: too fast, attention, straight-lining, duplicates."""

from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.stats._types import LongRatings
from core.stats.correlations import (
    ALL,
    filtering_correlations,
    rule_set_correlations,
    style_correlations,
)
from core.stats.heuristics import RULES, HeuristicRecord, annotator_styles, low_variance_annotators
from core.stats.quality import (
    QUALITY_RULES,
    attention_check_annotators,
    attention_count_annotators,
    duplicate_inconsistency_annotators,
    longest_run,
    straight_lining_annotators,
    too_fast_annotators,
)

nan = np.nan


# --------------------------------------------------------------------------- too fast


def test_it_flags_an_annotator_who_answers_most_items_under_the_fixed_floor():
    dense = np.array([[1, 2, 3, 4.0], [1, 2, 3, 4]])
    ms = np.array([[200, 300, 250, 4000.0], [5000, 200, 6000, 7000]])
    result = too_fast_annotators(dense, ms)
    alice, bob = result.records
    assert alice.value == 0.75 and alice.flagged and alice.detail["n_fast"] == 3
    assert bob.value == 0.25 and not bob.flagged
    assert result.flagged == (0,)
    assert result.params == {"floor_s": 1.0, "floor": "fixed", "reading_speed": None,
                             "threshold": 0.5, "min_answers": 3}
    assert isinstance(alice, HeuristicRecord) and alice.to_record()["detail"]["median_s"] == 0.275


def test_it_derives_the_floor_from_the_items_length_and_a_reading_speed():
    # 50 words at 5 words/s → 10 s; 2 words → 0.4 s, raised to the 1 s minimum.
    dense = np.array([[3, 3, 3.0]])
    ms = np.array([[8000, 900, 12000.0]])
    result = too_fast_annotators(dense, ms, item_length=[50, 2, 50], reading_speed=5.0)
    assert result.records[0].value == pytest.approx(2 / 3) and result.records[0].flagged
    assert result.params["floor"] == "reading_speed" and result.params["reading_speed"] == 5.0


def test_it_does_not_count_an_answer_exactly_at_the_floor_as_too_fast():
    result = too_fast_annotators(np.array([[1, 2, 3.0]]), np.array([[1000, 1000, 1000.0]]))
    assert result.records[0].value == 0.0


def test_it_ignores_blank_and_untimed_answers_and_needs_enough_of_them():
    dense = np.array([[1, nan, 3, 4.0]])
    ms = np.array([[100, 100, nan, 100.0]])
    record = too_fast_annotators(dense, ms).records[0]
    assert record.value is None and record.n == 2 and "fewer than 3 timed answers" in record.reason
    assert not record.flagged


def test_it_rejects_a_reading_speed_without_lengths_and_the_reverse():
    with pytest.raises(ValueError, match="reading_speed"):
        too_fast_annotators(np.array([[1.0]]), np.array([[1.0]]), item_length=[3])
    with pytest.raises(ValueError, match="needs item_length"):
        too_fast_annotators(np.array([[1.0]]), np.array([[1.0]]), reading_speed=5.0)


def bot_study(seed=0):
    """The issue's case: 39 items on 0-7, 12 honest annotators (3-20 s), one bot (~0.2 s)."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 8, 39)
    honest = np.clip(np.rint(truth + rng.normal(0, 0.7, (12, 39))), 0, 7)
    bot = rng.integers(0, 8, (1, 39)).astype(float)
    ms = np.vstack([rng.uniform(3000, 20000, (12, 39)), rng.normal(200, 30, (1, 39))])
    return np.vstack([honest, bot]), ms


def test_it_flags_the_random_clicker_of_the_issue_and_nobody_else():
    dense, ms = bot_study()
    assert too_fast_annotators(dense, ms).flagged == (12,)
    words = np.full(39, 25.0)
    assert too_fast_annotators(dense, ms, item_length=words, reading_speed=5.0).flagged == (12,)


# --------------------------------------------------------------------------- attention


def test_it_counts_failed_checks_within_their_tolerance():
    result = attention_check_annotators(
        annotator=[0, 0, 1, 1, 1], value=[2, 3, 5, 7, nan], expected=[2, 5, 5, 5, 2],
        tolerance=[0, 1, 1, 1, 0], n_annotators=3,
    )
    alice, bob, carol = result.records
    assert alice.value == 1 and not alice.flagged
    assert alice.detail == {"n_checks": 2, "failures": 1, "accuracy": 0.5}
    assert bob.value == 2 and bob.flagged and bob.detail["accuracy"] == pytest.approx(1 / 3)
    assert carol.value is None and carol.reason == "no attention checks answered"
    assert result.params == {"max_failures": 2, "blank_fails": True}
    assert result.records[1].threshold == 2.0


def test_it_can_let_a_blank_check_pass():
    result = attention_check_annotators(annotator=[0, 0], value=[nan, nan], expected=[2, 2],
                                        n_annotators=1, blank_fails=False, max_failures=1)
    assert result.records[0].value == 0 and not result.records[0].flagged


def test_it_rejects_annotators_outside_the_range():
    with pytest.raises(ValueError, match="annotator"):
        attention_check_annotators(annotator=[3], value=[1], expected=[1], n_annotators=2)


def test_it_flags_from_counts_of_checks_answered_and_failed():
    result = attention_count_annotators(n_checks=[4, 0, 3], failures=[0, 0, 2])
    first, none, third = result.records
    assert first.value == 0 and not first.flagged and first.detail["accuracy"] == 1.0
    assert none.value is None and none.reason == "no attention checks answered"
    assert third.value == 2 and third.flagged
    assert third.detail == {"n_checks": 3, "failures": 2, "accuracy": pytest.approx(1 / 3)}
    assert result.params == {"max_failures": 2}
    assert attention_count_annotators(n_checks=[3], failures=[2], max_failures=3).flagged == ()


def test_it_rejects_more_failures_than_checks():
    with pytest.raises(ValueError, match="failures"):
        attention_count_annotators(n_checks=[1], failures=[2])


# --------------------------------------------------------------------------- straight-lining


def test_it_finds_the_longest_run_over_the_answers_given():
    assert longest_run([3, 3, nan, 3, 1, 1]) == (3, 3.0)
    assert longest_run([1, 2, 2, 1, 1]) == (2, 2.0)  # the first of equally long runs
    assert longest_run([nan, nan]) == (0, None)


def test_it_flags_a_long_run_or_a_run_that_is_most_of_the_answers():
    result = straight_lining_annotators([
        [4] * 12 + [1, 2, 3, 5, 6, 7, 0, 1],  # run 12 ≥ 10
        [4, 4, 4, 4, 4, 4, 2],  # run 6, share 0.86 ≥ 0.8
        [1, 2, 3, 4, 5, 1, 2, 3],  # run 1
        [4, 4, 4],  # too few answers
    ])
    liner, short, honest, few = result.records
    assert liner.value == 12 and liner.flagged and liner.detail["run_value"] == 4.0
    assert short.value == 6 and short.flagged and short.detail["share"] == pytest.approx(6 / 7)
    assert honest.value == 1 and not honest.flagged
    assert few.value is None and "fewer than 5 answers" in few.reason
    assert result.flagged == (0, 1)
    assert result.params == {"run_threshold": 10, "share_threshold": 0.8, "min_answers": 5}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([0.0, 1.0, 2.0, nan]), max_size=40))
def test_its_longest_run_matches_a_naive_count(values):
    answered = [v for v in values if not np.isnan(v)]
    best = 0
    for start in range(len(answered)):
        end = start
        while end < len(answered) and answered[end] == answered[start]:
            end += 1
        best = max(best, end - start)
    assert longest_run(values)[0] == best


# --------------------------------------------------------------------------- duplicates


def test_it_flags_an_annotator_whose_repeats_are_mostly_beyond_the_tolerance():
    result = duplicate_inconsistency_annotators(
        annotator=[0, 0, 0, 1, 1, 1], first=[7, 3, 5, 2, 4, nan], repeat=[7, 6, 1, 3, 4, 4],
        n_annotators=3,
    )
    alice, bob, carol = result.records
    assert alice.value == pytest.approx(2 / 3) and alice.flagged
    assert alice.detail == {"n_inconsistent": 2, "mean_abs_diff": pytest.approx(7 / 3)}
    assert bob.value == 0.0 and bob.n == 2 and not bob.flagged  # the blank pair is dropped
    assert carol.value is None and "fewer than 2" in carol.reason
    assert result.params == {"tolerance": 1.0, "threshold": 0.5, "min_pairs": 2}


def test_it_can_demand_identical_repeats():
    result = duplicate_inconsistency_annotators(annotator=[0, 0], first=[1, 2], repeat=[2, 2],
                                                n_annotators=1, tolerance=0.0)
    assert result.records[0].value == 0.5 and not result.records[0].flagged


# --------------------------------------------------------------------------- rule sets


def crowd(seed=0, n_annotators=10, n_items=60):
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, n_items)
    dense = np.clip(truth + rng.integers(-1, 2, (n_annotators, n_items)), 1, 5).astype(float)
    dense[rng.random(dense.shape) < 0.3] = nan
    dense[9] = rng.integers(1, 6, n_items)  # a random annotator
    metric = (truth - 1) / 4 + rng.normal(0, 0.2, n_items)
    return dense, {"m": metric}


def test_it_correlates_each_new_rule_alone_and_all_rules_together():
    dense, metrics = crowd()
    flagged = {"slow": [1], "low_variance": [], "too_fast": [9], "attention": [9, 3]}
    result = rule_set_correlations(dense, metrics=metrics, flagged=flagged)
    rows = [(r.rules, r.removed) for r in result.records]
    assert rows == [((), ()), (("slow",), (1,)), (("low_variance",), ()), (("too_fast",), (9,)),
                    (("attention",), (3, 9)),
                    (("attention", "low_variance", "slow", "too_fast"), (1, 3, 9))]
    assert result.params["sets"][-1] == ["attention", "low_variance", "slow", "too_fast"]
    base = result.records[0].pearson
    fast = result.records[3]
    assert fast.pearson > base and fast.pearson_change == pytest.approx(fast.pearson / base - 1)


def test_it_agrees_with_the_31_combinations_on_the_combinations_it_shares():
    dense, metrics = crowd(1)
    flagged = {rule: [j] for j, rule in enumerate(RULES)}
    table = filtering_correlations(dense, metrics=metrics, flagged=flagged)
    sets = [c for size in range(1, 6) for c in combinations(RULES, size)]
    mine = rule_set_correlations(dense, metrics=metrics, flagged=flagged, sets=sets)
    assert [r.to_record() for r in mine.records] == [r.to_record() for r in table.records]
    assert len(table.records) == 32


def test_the_31_combination_table_is_unchanged_by_the_new_rules():
    dense, metrics = crowd(2)
    five = {rule: [j] for j, rule in enumerate(RULES)}
    before = filtering_correlations(dense, metrics=metrics, flagged=five)
    everything = {**five, **{rule: [9] for rule in QUALITY_RULES}}
    rule_set_correlations(dense, metrics=metrics, flagged=everything)
    after = filtering_correlations(dense, metrics=metrics, flagged=five)
    assert after == before
    assert before.params["rules"] == list(RULES)


def test_it_rejects_sets_naming_rules_it_was_not_given():
    dense, metrics = crowd()
    with pytest.raises(ValueError, match="absent from flagged"):
        rule_set_correlations(dense, metrics=metrics, flagged={"slow": [1]}, sets=[("fast",)])
    with pytest.raises(ValueError, match="the string"):
        rule_set_correlations(dense, metrics=metrics, flagged={"slow": [1]}, sets=["slow"])
    got = rule_set_correlations(dense, metrics=metrics, flagged={"slow": [1]}, sets=[ALL])
    assert got.records[1].rules == ("slow",)


# --------------------------------------------------------------------------- styles (table 2)


def test_style_records_have_the_results_shape_and_can_exclude_low_variance_annotators():
    dense = np.array([
        [1, 5, 1, 5, 1, 5.0],  # radical
        [1, 5, 5, 5, 1, 5],  # radical
        [2, 4, 2, 4, 2, 4],  # centrist
        [2, 4, 4, 4, 2, 4],  # centrist
        [1, 1, 1, 1, 1, 1],  # radical, low variance
    ])
    metric = np.array([0.1, 0.9, 0.3, 0.8, 0.2, 0.95])
    styles = annotator_styles(dense, ignored=(3,))
    assert styles.annotators("radical") == (0, 1, 4)
    low = low_variance_annotators(dense)
    assert low.flagged == (4,)
    recs = style_correlations(dense, metrics={"m": metric}, styles=styles, exclude=low)
    radical = recs[0]
    assert radical.annotators == (0, 1)
    assert radical.to_record() == {
        "style": "radical", "filtered": False, "annotators": [0, 1], "metric": "m",
        "pearson": pytest.approx(radical.pearson), "spearman": pytest.approx(radical.spearman),
        "n_items": 6,
    }


def test_it_rejects_a_min_ratings_below_one_for_styles():
    dense = np.array([[1, 5, 1.0], [2, 4, 2]])
    with pytest.raises(ValueError, match="min_ratings"):
        style_correlations(dense, metrics={"m": [1, 2, 3]}, styles=annotator_styles(dense),
                           min_ratings=0)


def test_quality_rules_accept_long_ratings():
    ratings = LongRatings(item=np.array([0, 1, 2]), annotator=np.array([0, 0, 0]),
                          value=np.array([1.0, 2.0, 3.0]), n_items=3, n_annotators=1)
    assert too_fast_annotators(ratings, np.array([10.0, 20.0, 30.0])).flagged == (0,)
