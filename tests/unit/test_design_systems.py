"""The assignment design with systems and sources (pure): systems balanced within each
annotator's subset, the outputs of one source together or spread apart, reproducible from the
recorded seed, and a study without systems planned exactly as before (docs/systems.md)."""

from collections import Counter

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from core.design import Design, plan_presentations


def design(m=0, k=3, d=0, gap=5, order="spread"):
    return Design(items_per_participant=m, annotators_per_item=k, duplicates=d, min_gap=gap,
                  source_order=order)


def grid(n_systems: int, n_sources: int) -> tuple[list[int], dict[int, str], dict[int, str]]:
    """Items 0… of every system over every source: item = source * n_systems + system."""
    ids = list(range(n_systems * n_sources))
    return (ids, {i: f"sys{i % n_systems}" for i in ids},
            {i: f"doc{i // n_systems}" for i in ids})


def first_showings(plan):
    return [i for i, p in plan if p == 1]


def test_an_empty_mapping_gives_the_plan_without_systems():
    for seed in range(20):
        spec = design(m=7, d=2, gap=3)
        before = plan_presentations(list(range(20)), design=spec, seed=seed,
                                    assigned_counts={3: 1, 5: 2})
        after = plan_presentations(list(range(20)), design=spec, seed=seed,
                                   assigned_counts={3: 1, 5: 2}, systems={}, sources={i: ""
                                                                                  for i in range(20)})
        assert before == after


def test_it_refuses_an_unknown_source_order():
    with pytest.raises(ValueError, match="source_order"):
        plan_presentations([1, 2], design=design(order="mixed"), seed=1)


@settings(max_examples=150, deadline=None)
@given(n_systems=st.integers(1, 6), n_sources=st.integers(1, 12), m=st.integers(1, 40),
       seed=st.integers(0, 2**32), order=st.sampled_from(["spread", "together"]),
       data=st.data())
def test_each_annotator_sees_every_system_about_equally_often(n_systems, n_sources, m, seed,
                                                              order, data):
    # (together: whole sources are chosen, each with one output of every system)
    ids, systems, sources = grid(n_systems, n_sources)
    assume(m < len(ids))
    counts = data.draw(st.dictionaries(st.sampled_from(ids), st.integers(0, 4)))
    plan = plan_presentations(ids, design=design(m=m, order=order), seed=seed,
                              assigned_counts=counts, systems=systems, sources=sources)
    shown = Counter(systems[i] for i in first_showings(plan))
    per_system = [shown.get(f"sys{s}", 0) for s in range(n_systems)]
    assert sum(per_system) == m
    assert max(per_system) - min(per_system) <= 1


@settings(max_examples=100, deadline=None)
@given(sizes=st.lists(st.integers(0, 15), min_size=2, max_size=5), m=st.integers(1, 40),
       seed=st.integers(0, 2**32))
def test_a_system_with_few_items_gives_them_all_and_the_others_share_the_rest(sizes, m, seed):
    systems = {}
    for s, size in enumerate(sizes):
        for _ in range(size):
            systems[len(systems)] = f"sys{s}"
    ids = list(systems)
    assume(0 < m < len(ids))
    plan = plan_presentations(ids, design=design(m=m), seed=seed, systems=systems)
    assert len(first_showings(plan)) == m
    shown = Counter(systems[i] for i in first_showings(plan))
    got = {s: shown.get(f"sys{s}", 0) for s, size in enumerate(sizes) if size}
    short = [got[s] for s in got if got[s] < sizes[s]]  # systems with items left over
    assert short, "m is below the pool, so some system has items left"
    assert max(short) - min(short) <= 1
    # a system that gave every item it has was below the level of the others
    assert all(got[s] <= min(short) + 1 for s in got if got[s] == sizes[s])


def test_balancing_systems_keeps_the_overlap_balanced():
    ids, systems, sources = grid(4, 30)
    counts: Counter = Counter()
    for participant in range(12):
        plan = plan_presentations(ids, design=design(m=30, k=3), seed=participant,
                                  assigned_counts=counts, systems=systems, sources=sources)
        counts.update(first_showings(plan))
    # 12 × 30 = 360 showings over 120 items: exactly 3 each
    assert set(counts.values()) == {3}


@settings(max_examples=150, deadline=None)
@given(n_systems=st.integers(1, 5), n_sources=st.integers(1, 10), seed=st.integers(0, 2**32),
       m=st.integers(0, 50))
def test_together_shows_the_outputs_of_one_source_one_after_the_other(n_systems, n_sources,
                                                                      seed, m):
    ids, systems, sources = grid(n_systems, n_sources)
    plan = plan_presentations(ids, design=design(m=m, order="together"), seed=seed,
                              systems=systems, sources=sources)
    order = [sources[i] for i in first_showings(plan)]
    runs = [s for n, s in enumerate(order) if n == 0 or order[n - 1] != s]
    assert len(runs) == len(set(runs))  # each source in one run


def test_together_shuffles_blocks_and_their_insides_per_seed():
    ids, systems, sources = grid(3, 8)
    plans = [first_showings(plan_presentations(ids, design=design(order="together"), seed=seed,
                                               sources=sources)) for seed in range(30)]
    assert len({tuple(sources[i] for i in plan[::3]) for plan in plans}) > 10  # block order
    within = {tuple(systems[i] for i in plan[:3]) for plan in plans}
    assert len(within) > 1  # the order inside a block changes too


def test_together_keeps_repeats_between_blocks():
    ids, _, sources = grid(3, 10)
    for seed in range(40):
        plan = plan_presentations(ids, design=design(d=3, gap=3, order="together"), seed=seed,
                                  sources=sources)
        assert sum(1 for _, p in plan if p == 2) == 3
        for n, (_, presentation) in enumerate(plan):
            if presentation != 2:
                continue
            before = [sources[i] for i, p in plan[:n] if p == 1][-1:]
            after = [sources[i] for i, p in plan[n + 1:] if p == 1][:1]
            assert not before or not after or before != after  # not inside a block


@settings(max_examples=200, deadline=None)
@given(sizes=st.lists(st.integers(1, 8), min_size=1, max_size=12), free=st.integers(0, 6),
       seed=st.integers(0, 2**32))
def test_spread_never_puts_two_outputs_of_a_source_side_by_side_when_it_can(sizes, free, seed):
    sources: dict[int, str] = {}
    for s, size in enumerate(sizes):
        for _ in range(size):
            sources[len(sources)] = f"doc{s}"
    ids = list(sources) + list(range(len(sources), len(sources) + free))  # free: no source
    plan = plan_presentations(ids, design=design(), seed=seed, sources=sources)
    order = [sources.get(i) for i in first_showings(plan)]
    adjacent = sum(1 for a, b in zip(order, order[1:], strict=False) if a is not None and a == b)
    n = len(ids)
    if 2 * max(sizes) <= n + 1:
        assert adjacent == 0
    else:  # more than half the items from one source: the fewest adjacent pairs possible
        assert adjacent == 2 * max(sizes) - n - 1
    assert sorted(first_showings(plan)) == sorted(ids)


def test_spread_orders_differ_between_participants():
    ids, _, sources = grid(4, 10)
    plans = {tuple(first_showings(plan_presentations(ids, design=design(), seed=seed,
                                                     sources=sources))) for seed in range(20)}
    assert len(plans) == 20


@pytest.mark.parametrize("order", ["spread", "together"])
def test_a_replan_with_the_recorded_seed_gives_the_same_presentations(order):
    ids, systems, sources = grid(4, 15)
    spec = design(m=24, d=2, gap=4, order=order)
    first = plan_presentations(ids, design=spec, seed=99, systems=systems, sources=sources,
                               assigned_counts={1: 1})
    again = plan_presentations(ids, design=spec, seed=99, systems=systems, sources=sources,
                               assigned_counts={1: 1})
    assert first == again


def test_spread_places_a_repeat_away_from_its_own_source():
    ids, _, sources = grid(2, 10)
    for seed in range(50):
        plan = plan_presentations(ids, design=design(d=3, gap=3), seed=seed, sources=sources)
        order = [sources[i] for i, _ in plan]
        assert all(a != b for a, b in zip(order, order[1:], strict=False))
