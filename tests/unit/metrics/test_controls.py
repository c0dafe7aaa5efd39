"""Random control pairs built from the study's own sentences (Solomon et al. 2021, §4)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.metrics.controls import random_control_pairs

PAIRS = [(i, f"a{i}", f"b{i}") for i in range(10)]


def test_it_is_reproducible_with_the_same_seed():
    one = random_control_pairs(PAIRS, 5, np.random.default_rng(7))
    two = random_control_pairs(PAIRS, 5, np.random.default_rng(7))
    assert one == two


def test_it_never_pairs_a_sentence_with_its_partner():
    controls = random_control_pairs(PAIRS, 90, np.random.default_rng(0))
    assert len(set(controls)) == 90  # every allowed combination, once
    for a, b, (ia, ib) in controls:
        assert ia != ib and a == f"a{ia}" and b == f"b{ib}"


def test_it_avoids_partners_shared_across_pairs_and_identical_texts():
    pairs = [(1, "s", "t"), (2, "s", "u"), (3, "u", "v")]
    controls = random_control_pairs(pairs, 2, np.random.default_rng(1))
    # allowed: (s, v) and (u, t); (s, t), (s, u), (u, v), (u, u) are related or identical
    assert sorted((a, b) for a, b, _ in controls) == [("s", "v"), ("u", "t")]


def test_it_names_the_source_pairs_of_each_sentence():
    controls = random_control_pairs([(1, "A", "A2"), (2, "B", "B2")], 2, np.random.default_rng(3))
    assert sorted(controls) == [("A", "B2", (1, 2)), ("B", "A2", (2, 1))]


def test_it_raises_a_clear_error_when_impossible():
    with pytest.raises(ValueError, match="cannot make 3 control pairs: only 2"):
        random_control_pairs([(1, "A", "A2"), (2, "B", "B2")], 3, np.random.default_rng(0))


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from("abcdef"), st.sampled_from("abcdef")), min_size=1, max_size=8),
    st.integers(0, 5),
)
def test_it_never_returns_a_related_or_self_pair(texts, n):
    pairs = [(i, a, b) for i, (a, b) in enumerate(texts)]
    related = {frozenset((a, b)) for a, b in texts}
    try:
        controls = random_control_pairs(pairs, n, np.random.default_rng(n))
    except ValueError:
        return
    assert len(controls) == n
    for a, b, _ in controls:
        assert a != b and frozenset((a, b)) not in related
