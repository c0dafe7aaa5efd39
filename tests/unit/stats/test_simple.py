"""Simple items: at most T distinct raw answers among annotators (Borovikova et al. 2022, §4)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.stats._types import LongRatings
from core.stats.scales import PRESETS, reduce_values
from core.stats.simple import distinct_answer_counts, simple_items, simple_items_long

nan = np.nan

# Five items, four annotators, raw 0..7 answers (worked by hand in the comments).
RAW = np.array(
    [
        [7, 0, 3, nan, 5],
        [7, 2, 4, nan, 6],
        [6, 4, 3, nan, nan],
        [7, 6, 1, nan, nan],
    ]
)
# item 0: {6, 7} -> 2; item 1: {0, 2, 4, 6} -> 4; item 2: {1, 3, 4} -> 3; item 3: none;
# item 4: {5, 6} -> 2.


def test_it_counts_distinct_answers_per_item():
    np.testing.assert_array_equal(distinct_answer_counts(RAW), [2, 4, 3, 0, 2])


def test_it_keeps_items_with_at_most_three_distinct_answers():
    np.testing.assert_array_equal(simple_items(RAW), [True, False, True, False, True])


def test_it_does_not_call_an_unanswered_item_simple():
    assert not simple_items(np.full((3, 1), nan))[0]


def test_it_uses_the_given_threshold():
    np.testing.assert_array_equal(simple_items(RAW, threshold=2), [True, False, False, False, True])
    np.testing.assert_array_equal(simple_items(RAW, threshold=4), [True, True, True, False, True])


def test_it_counts_a_single_answer_as_simple():
    assert simple_items(np.array([[nan], [3.0]]))[0]


def test_it_does_not_count_blanks_as_an_answer():
    np.testing.assert_array_equal(distinct_answer_counts(np.array([[1, nan], [nan, nan]])), [1, 0])


def test_it_computes_the_set_on_the_raw_scale_not_the_reduction():
    # Item 1 has four raw answers (0, 2, 4, 6) but two gravity codes (0, 0, 1, 1): it stays
    # not simple, because callers reuse the raw mask for every reduction.
    reduced = reduce_values(RAW, PRESETS["likert-0-7-coref"]["reductions"]["gravity"])
    assert distinct_answer_counts(reduced)[1] == 2
    assert not simple_items(RAW)[1]


def test_it_rejects_a_threshold_below_one():
    with pytest.raises(ValueError, match="at least 1"):
        simple_items(RAW, threshold=0)


def test_it_rejects_a_non_integer_threshold():
    with pytest.raises(ValueError, match="integer"):
        simple_items(RAW, threshold=2.5)


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), threshold=st.integers(1, 5))
def test_it_gives_the_same_mask_from_long_format_data(seed, threshold):
    rng = np.random.default_rng(seed)
    ratings = rng.integers(0, 8, size=(rng.integers(1, 7), rng.integers(1, 15))).astype(float)
    ratings[rng.random(ratings.shape) < 0.4] = nan
    long = simple_items_long(LongRatings.from_dense(ratings), threshold=threshold)
    np.testing.assert_array_equal(long, simple_items(ratings, threshold=threshold))
