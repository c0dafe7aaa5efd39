"""The assignment design: choice, order, duplicates, reproducibility (pure, no database)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.design import Design, participant_seed, plan_presentations


def design(m=0, k=3, d=0, gap=5):
    return Design(items_per_participant=m, annotators_per_item=k, duplicates=d, min_gap=gap)


def test_it_shows_every_item_once_without_duplicates():
    plan = plan_presentations(list(range(10)), design=design(), seed=1)
    assert sorted(i for i, _ in plan) == list(range(10))
    assert {p for _, p in plan} == {1}


def test_it_is_reproducible_from_the_recorded_seed():
    a = plan_presentations(list(range(30)), design=design(d=3), seed=42)
    b = plan_presentations(list(range(30)), design=design(d=3), seed=42)
    c = plan_presentations(list(range(30)), design=design(d=3), seed=43)
    assert a == b
    assert a != c


def test_it_derives_distinct_seeds_per_participant():
    seeds = {participant_seed(7, n) for n in range(1000)}
    assert len(seeds) == 1000
    assert all(0 <= s < 2**63 for s in seeds)


@settings(max_examples=200, deadline=None)
@given(n=st.integers(4, 60), d=st.integers(0, 5), gap=st.integers(2, 8), seed=st.integers(0, 2**32))
def test_it_places_repeats_at_least_gap_positions_after_the_first_showing(n, d, gap, seed):
    spec = design(d=d, gap=gap)
    if spec.problems(available=n):
        with pytest.raises(ValueError):
            plan_presentations(list(range(n)), design=spec, seed=seed)
        return
    plan = plan_presentations(list(range(n)), design=spec, seed=seed)
    assert len(plan) == n + d
    repeats = [i for i, p in plan if p == 2]
    assert len(repeats) == len(set(repeats)) == d
    for item in repeats:
        first, second = plan.index((item, 1)), plan.index((item, 2))
        assert second - first >= gap
        assert second - first > 1  # never adjacent


def test_it_never_repeats_control_items():
    controls = frozenset(range(5))
    for seed in range(50):
        plan = plan_presentations(list(range(12)), design=design(d=3, gap=2), seed=seed,
                                  control_ids=controls)
        assert not {i for i, p in plan if p == 2} & controls


def test_it_prefers_items_with_fewer_annotators():
    counts = {i: (3 if i < 6 else 0) for i in range(10)}
    plan = plan_presentations(list(range(10)), design=design(m=4, k=3), seed=3,
                              assigned_counts=counts)
    assert {i for i, _ in plan} <= set(range(6, 10))


def test_it_balances_overlap_across_participants():
    counts: dict[int, int] = {}
    for n in range(9):
        plan = plan_presentations(list(range(12)), design=design(m=4, k=3), seed=n,
                                  assigned_counts=counts)
        for i, _ in plan:
            counts[i] = counts.get(i, 0) + 1
    assert set(counts.values()) == {3}


def test_it_explains_an_impossible_design():
    problems = design(m=5, d=3, gap=5).problems(available=20)
    assert problems and "at least 7 items per participant" in problems[0]
    assert design().problems(available=0) == ["the study has no items"]
