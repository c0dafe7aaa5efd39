"""Duplicate consistency per annotator (Borovikova et al. 2022, §3.4)."""

import numpy as np
import pytest

from core.stats.duplicates import (
    REASON_NO_PAIRS,
    DuplicateResult,
    duplicate_consistency,
    duplicate_consistency_long,
    duplicate_pairs_long,
)
from core.stats.scales import PRESETS, reduce_values

nan = np.nan


def test_it_counts_pairs_exact_agreement_and_mean_absolute_difference():
    # Pairs (7, 7), (3, 4), (5, 3): one identical; differences 0, 1, 2.
    result = duplicate_consistency(np.array([7, 3, 5.0]), np.array([7, 4, 3.0]))
    assert result == DuplicateResult(3, pytest.approx(1 / 3), pytest.approx(1.0), None)


def test_it_drops_a_pair_with_a_blank_on_either_side():
    result = duplicate_consistency(np.array([7, nan, 5.0]), np.array([7, 4, nan]))
    assert result == DuplicateResult(1, 1.0, 0.0, None)


def test_it_returns_none_with_a_reason_without_pairs():
    result = duplicate_consistency(np.array([nan]), np.array([2.0]))
    assert result == DuplicateResult(0, None, None, REASON_NO_PAIRS)


def test_it_measures_consistency_on_a_reduction_after_reducing_both_answers():
    gravity = PRESETS["likert-0-7-coref"]["reductions"]["gravity"]
    first, repeat = np.array([3, 1, 7.0]), np.array([6, 2, 6.0])
    result = duplicate_consistency(reduce_values(first, gravity), reduce_values(repeat, gravity))
    # gravity: (1, 1), (0, 0), (2, 1)
    assert result == DuplicateResult(3, pytest.approx(2 / 3), pytest.approx(1 / 3), None)


def test_it_rejects_arrays_of_different_lengths():
    with pytest.raises(ValueError, match="same length"):
        duplicate_consistency(np.array([1.0, 2.0]), np.array([1.0]))


# Long rows: annotator, item, presentation, value. Annotator 0 repeats items 5 and 6, annotator
# 1 repeats item 5 but left the repeat blank, annotator 2 has no repeat.
ROWS = np.array(
    [
        [0, 5, 12, 6.0],
        [0, 5, 1, 7.0],
        [0, 6, 2, 3.0],
        [0, 6, 9, 3.0],
        [0, 7, 3, 1.0],
        [1, 5, 4, 2.0],
        [1, 5, 8, nan],
        [2, 5, 1, 4.0],
    ]
)


def test_it_pairs_the_first_and_the_later_presentation():
    annotator, item, first, repeat = duplicate_pairs_long(*ROWS.T)
    np.testing.assert_array_equal(annotator, [0, 0, 1])
    np.testing.assert_array_equal(item, [5, 6, 5])
    np.testing.assert_array_equal(first, [7, 3, 2])
    np.testing.assert_array_equal(repeat, [6, 3, nan])


def test_it_produces_one_record_per_annotator():
    records = duplicate_consistency_long(*ROWS.T, n_annotators=4)
    assert records == {
        0: DuplicateResult(2, 0.5, 0.5, None),
        1: DuplicateResult(0, None, None, REASON_NO_PAIRS),
        2: DuplicateResult(0, None, None, REASON_NO_PAIRS),
        3: DuplicateResult(0, None, None, REASON_NO_PAIRS),
    }


def test_it_lists_only_present_annotators_without_a_count():
    assert sorted(duplicate_consistency_long(*ROWS.T)) == [0, 1, 2]


def test_it_rejects_two_rows_with_the_same_presentation():
    rows = np.array([[0, 5, 1, 7.0], [0, 5, 1, 6.0]])
    with pytest.raises(ValueError, match="same presentation"):
        duplicate_pairs_long(*rows.T)


def test_it_pairs_only_the_first_two_of_three_presentations():
    # Item 5 shown three times to annotator 0 (lines in any order, positions 9, 1, 4): the
    # showings at 1 and 4 pair; the one at 9 enters no pair. Item 6 shown once: no pair.
    rows = np.array([[0, 5, 9, 1.0], [0, 6, 2, 3.0], [0, 5, 1, 7.0], [0, 5, 4, 6.0]])
    annotator, item, first, repeat = duplicate_pairs_long(*rows.T)
    np.testing.assert_array_equal(annotator, [0])
    np.testing.assert_array_equal(item, [5])
    np.testing.assert_array_equal(first, [7.0])
    np.testing.assert_array_equal(repeat, [6.0])
    assert duplicate_consistency_long(*rows.T) == {0: DuplicateResult(1, 0.0, 1.0, None)}


def test_it_pairs_as_before_when_a_third_presentation_is_added():
    with_third = np.vstack([ROWS, [[0, 5, 99, 1.0], [1, 5, 99, 4.0]]])
    for before, after in zip(duplicate_pairs_long(*ROWS.T), duplicate_pairs_long(*with_third.T),
                             strict=True):
        np.testing.assert_array_equal(before, after)


def test_it_pairs_no_rows():
    assert all(part.size == 0 for part in duplicate_pairs_long([], [], [], []))
