"""Assignment design: which items a participant sees, in which order, and which twice.

Pure functions (no database), so the design can be tested exhaustively and reproduced from the
recorded seed.

Items may name the system that produced them and the source they answer (docs/systems.md).
Then a participant who sees a subset sees every system about equally often (the counts per
system differ by at most one where the items allow), and the outputs of one source are either
spread apart (`spread`: no two adjacent where the numbers allow) or shown one after the other
(`together`: the order of the sources and the order within each source shuffled per participant).
A study whose items name neither is planned exactly as before (the same random draws).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

SPREAD, TOGETHER = "spread", "together"
SOURCE_ORDERS = (SPREAD, TOGETHER)


@dataclass(frozen=True)
class Design:
    items_per_participant: int  # 0 = every item
    annotators_per_item: int
    duplicates: int
    min_gap: int
    # How the outputs of one source are ordered (items that name a source): SOURCE_ORDERS.
    source_order: str = SPREAD

    @property
    def gap(self) -> int:
        # The repeat is never adjacent to the first showing, whatever min_gap says.
        return max(self.min_gap, 2)

    def n_items(self, available: int) -> int:
        if self.items_per_participant == 0:
            return available
        return min(self.items_per_participant, available)

    def problems(self, *, available: int, controls: int = 0) -> list[str]:
        """Return why this design cannot be built over `available` items (empty if it can)."""
        out = []
        if available == 0:
            out.append("the study has no items")
            return out
        m = self.n_items(available)
        if self.duplicates > max(m - controls, 0):
            out.append(f"{self.duplicates} duplicates asked but each participant sees only "
                       f"{m - controls} non-control items")
        elif self.duplicates and m - self.gap + 1 < self.duplicates:
            out.append(
                f"{self.duplicates} duplicates at least {self.gap} positions after their first "
                f"showing need at least {self.duplicates + self.gap - 1} items per participant "
                f"(they see {m})"
            )
        return out


def participant_seed(study_seed: int, participant_number: int) -> int:
    """Return the recorded seed of one participant's order (63 bits, reproducible)."""
    state = np.random.SeedSequence([study_seed & 0xFFFFFFFFFFFFFFFF, participant_number])
    return int(state.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))


def plan_presentations(
    item_ids: Sequence[int],
    *,
    design: Design,
    seed: int,
    assigned_counts: Mapping[int, int] | None = None,
    control_ids: frozenset[int] = frozenset(),
    systems: Mapping[int, str] | None = None,
    sources: Mapping[int, str] | None = None,
) -> list[tuple[int, int]]:
    """Return the ordered (item id, presentation) list of one participant.

    Items are chosen among the least-assigned so far (balancing the overlap), with seeded
    random tie-breaking; the order is a seeded shuffle; `design.duplicates` non-control items
    are shown a second time (presentation 2), each at least `design.gap` positions after its
    first showing. Example: 4 items, every item, 1 duplicate with gap 2 gives e.g.
    [(3, 1), (1, 1), (4, 1), (3, 2), (2, 1)].

    ``systems`` and ``sources`` map an item to the system that produced it and the source it
    answers ("" or absent: none). With systems, a subset is chosen system by system
    (`_systems_choose`: the counts per system differ by at most one where the items allow);
    with sources, ``design.source_order`` orders them: ``together`` shows the outputs of one
    source one after the other, the sources and the outputs within each in a seeded random
    order (`_blocks_order`; a subset is then chosen whole sources at a time), ``spread`` keeps
    them apart (`_spread_order`). A repeat is placed between two sources (``together``) or not
    next to its own source (``spread``) where it can be. Without either, the draws are exactly
    those of a study without systems.
    """
    problems = design.problems(available=len(item_ids), controls=len(control_ids & set(item_ids)))
    if design.source_order not in SOURCE_ORDERS:
        problems.append(f"source_order must be one of {', '.join(SOURCE_ORDERS)}, "
                        f"not {design.source_order!r}")
    if problems:
        raise ValueError("; ".join(problems))
    rng = np.random.default_rng(seed)
    counts = assigned_counts or {}
    systems = {i: s for i, s in (systems or {}).items() if s}
    sources = {i: s for i, s in (sources or {}).items() if s}
    ids = np.asarray(item_ids, dtype=np.int64)
    m = design.n_items(len(ids))
    together = design.source_order == TOGETHER and bool(sources)
    if m < len(ids):
        # Least assigned first; items already at the overlap only when nothing else is left.
        count = np.array([counts.get(int(i), 0) for i in ids])
        full = count >= design.annotators_per_item
        if together:
            chosen = _blocks_choose(ids, count, full, m=m, sources=sources, systems=systems,
                                    rng=rng)
        elif systems:
            chosen = _systems_choose(ids, count, full, m=m, k=design.annotators_per_item,
                                     systems=systems, rng=rng)
        else:
            order = np.lexsort((rng.random(len(ids)), count, full))
            chosen = ids[order[:m]]
    else:
        chosen = ids
    if together:
        blocks = _blocks_order(chosen, sources=sources, rng=rng)
        sequence = [(i, 1) for block in blocks for i in block]
    elif sources:
        sequence = [(i, 1) for i in _spread_order(chosen, sources=sources, rng=rng)]
    else:
        sequence = [(int(i), 1) for i in rng.permutation(chosen)]
        blocks = []
    if design.duplicates:
        gap = design.gap
        # Candidates whose first showing leaves room for the repeat; non-control items only.
        room = [p for p, (i, _) in enumerate(sequence) if p <= m - gap and i not in control_ids]
        firsts = sorted(rng.choice(room, size=design.duplicates, replace=False).tolist())
        for item in [sequence[p][0] for p in firsts]:
            p_now = sequence.index((item, 1))
            if sources:
                q = _repeat_place(sequence, item, start=p_now + gap, sources=sources,
                                  together=together, rng=rng)
            else:
                q = int(rng.integers(p_now + gap, len(sequence) + 1))
            sequence.insert(q, (item, 2))
    return sequence


def _systems_choose(ids: np.ndarray, count: np.ndarray, full: np.ndarray, *, m: int, k: int,
                    systems: Mapping[int, str], rng: np.random.Generator) -> np.ndarray:
    """Choose ``m`` items so that every system gets about as many as the others.

    Each system's (and the items without one, as one more group) quota is an equal share of
    ``m``, filled level by level: a group with fewer items than its share gives all it has and
    the rest is shared among the others; the shares left over (``m`` not divisible) go to the
    groups with the most places left to fill (``k`` annotators per item), then to those whose
    next item is least assigned. Within a group, the least assigned items come
    first (seeded tie-break), as without systems. So the counts per system differ by at most one
    unless a system has too few items.
    """
    names: dict[str, int] = {}
    codes = np.fromiter((names.setdefault(systems.get(i, ""), len(names)) for i in ids.tolist()),
                        dtype=np.int64, count=len(ids))
    # By group (in order of the groups' names), then least assigned first, seeded tie-break.
    rank = np.empty(len(names), dtype=np.int64)
    rank[[names[g] for g in sorted(names)]] = np.arange(len(names))
    order = np.lexsort((rng.random(len(ids)), count, full, rank[codes]))
    starts = np.searchsorted(rank[codes][order], np.arange(len(names) + 1))
    size = np.diff(starts)
    room = np.bincount(rank[codes], weights=np.maximum(k - count, 0),
                       minlength=len(names)).astype(np.int64)
    quota = np.zeros(len(names), dtype=np.int64)
    left, open_groups = m, list(range(len(names)))
    while left and open_groups:
        share = left // len(open_groups)
        small = [g for g in open_groups if size[g] - quota[g] <= share]
        if small and share:
            for g in small:
                left -= int(size[g] - quota[g])
                quota[g] = size[g]
            open_groups = [g for g in open_groups if g not in small]
            continue
        for g in open_groups:
            quota[g] += share
        left -= share * len(open_groups)
        # The shares left over: to the groups with the most places left to fill (so that
        # over participants every system is shown as often as its items need), then whose next
        # item is least assigned.
        nexts = {g: int(order[starts[g] + quota[g]]) for g in open_groups if quota[g] < size[g]}
        keys = sorted((bool(full[i]), -int(room[g]), int(count[i]), rng.random(), g)
                      for g, i in nexts.items())
        for *_, g in keys[:left]:
            quota[g] += 1
            left -= 1
        open_groups = [g for g in open_groups if quota[g] < size[g]]
    chosen: np.ndarray = np.concatenate([order[starts[g]:starts[g] + quota[g]]
                                         for g in range(len(names))])
    picked: np.ndarray = ids[np.sort(chosen)]
    return picked


def _blocks_choose(ids: np.ndarray, count: np.ndarray, full: np.ndarray, *, m: int,
                   sources: Mapping[int, str], systems: Mapping[int, str],
                   rng: np.random.Generator) -> np.ndarray:
    """Choose ``m`` items whole sources at a time (``together``): the sources whose items are
    least assigned first (seeded tie-break); the last source, when only part of it fits, gives
    the items of the systems chosen least so far. An item without a source is a block of its
    own. When every source has one output of every system, the systems are balanced as
    `_systems_choose` balances them."""
    blocks: dict[str, list[int]] = defaultdict(list)
    for index, item in enumerate(ids.tolist()):
        source = sources.get(item)
        blocks[source if source is not None else f"\0{item}"].append(index)
    names = list(blocks)
    keys = np.array([[all(full[i] for i in blocks[n]), min(count[i] for i in blocks[n])]
                     for n in names])
    order = np.lexsort((rng.random(len(names)), keys[:, 1], keys[:, 0]))
    chosen: list[int] = []
    seen: dict[str, int] = defaultdict(int)
    for b in order.tolist():
        members = blocks[names[b]]
        room = m - len(chosen)
        if room <= 0:
            break
        if len(members) > room:
            members = sorted(members, key=lambda i: (seen[systems.get(int(ids[i]), "")],
                                                     bool(full[i]), int(count[i])))[:room]
        for i in members:
            seen[systems.get(int(ids[i]), "")] += 1
        chosen += members
    return ids[np.asarray(sorted(chosen), dtype=np.int64)]


def _blocks_order(chosen: np.ndarray, *, sources: Mapping[int, str],
                  rng: np.random.Generator) -> list[list[int]]:
    """Group the chosen items by source (an item without one alone) and shuffle the order of
    the groups and the order within each (``together``)."""
    blocks: dict[str, list[int]] = defaultdict(list)
    for item in chosen.tolist():
        source = sources.get(item)
        blocks[source if source is not None else f"\0{item}"].append(int(item))
    groups = list(blocks.values())
    return [[group[k] for k in rng.permutation(len(group)).tolist()]
            for group in (groups[b] for b in rng.permutation(len(groups)).tolist())]


def _spread_order(chosen: np.ndarray, *, sources: Mapping[int, str],
                  rng: np.random.Generator) -> list[int]:
    """Order the chosen items so that no two outputs of one source are adjacent where the
    numbers allow (``spread``), at random otherwise.

    A random sequential draw: at each place, an item is drawn uniformly among those left whose
    source is not the one just placed, as long as the rest stays arrangeable (r items left with
    no two of a source adjacent and not starting with the source just placed need every source's
    count at most (r + 1) / 2, and the source just placed at most r / 2); an item without a
    source may go anywhere. While the largest source holds fewer than half the items left every
    draw keeps that (one draw, O(1)); near the end of a skewed order the sources that keep it are
    found first. Where no draw keeps it arrangeable (a source has more than half the items),
    the largest source other than the last one placed is taken, which leaves the fewest
    adjacent pairs.
    """
    names: dict[str, int] = {}
    of: dict[int, int] = {}  # item -> its source's index; -1: no source
    for item in chosen.tolist():
        source = sources.get(int(item))
        of[int(item)] = -1 if source is None else names.setdefault(source, len(names))
    n_sources = len(names)
    # Plain lists: the draw touches one element at a time, where numpy's scalars cost more.
    left = [0] * n_sources
    pools: list[list[int]] = [[] for _ in range(n_sources + 1)]  # the last: no source
    flat = [int(i) for i in rng.permutation(chosen).tolist()]
    for item in flat:
        pools[of[item]].append(item)  # index -1: the pool without a source
        if of[item] >= 0:
            left[of[item]] += 1
    flat_at = {item: k for k, item in enumerate(flat)}
    pool_at = {item: k for pool in pools for k, item in enumerate(pool)}
    m1 = max(left, default=0)
    buckets = [0] * (m1 + 1)  # buckets[c]: the number of sources with c items left
    for count in left:
        buckets[count] += 1

    def take(item: int) -> int:
        """Remove ``item`` from what is left (swap with the last, O(1)); return its source."""
        for seq, at in ((flat, flat_at), (pools[of[item]], pool_at)):
            k = at.pop(item)
            moved = seq.pop()
            if moved != item:
                seq[k] = moved
                at[moved] = k
        source = of[item]
        if source >= 0:
            buckets[left[source]] -= 1
            left[source] -= 1
            buckets[left[source]] += 1
        return source

    out: list[int] = []
    last = -1
    while flat:
        r = len(flat) - 1  # items left after this place
        while m1 > 0 and buckets[m1] == 0:
            m1 -= 1
        if 2 * m1 <= r - 1:  # any source but the last keeps the rest arrangeable
            while True:
                item = flat[int(rng.random() * len(flat))]
                if of[item] < 0 or of[item] != last:
                    break
            out.append(item)
            last = take(item)
            continue
        counts = np.asarray(left, dtype=np.int64)
        top = np.sort(counts)[::-1]
        m2 = int(top[1]) if len(top) > 1 else 0
        unique_top = int((counts == m1).sum()) == 1
        others = np.where((counts == m1) & unique_top, m2, m1)  # the largest other source
        ok = (counts > 0) & (counts - 1 <= r // 2) & (2 * others <= r + 1)
        if last >= 0:
            ok[last] = False
        weights = np.where(ok, counts, 0).astype(float)
        free = pools[-1]
        # A free item breaks the run: the rest then only needs every source at most (r + 1) / 2.
        free_weight = float(len(free)) if free and 2 * m1 <= r + 1 else 0.0
        total = weights.sum() + free_weight
        if total > 0:
            pick = rng.random() * total
            if pick < free_weight:
                choice = -1
            else:
                choice = int(np.searchsorted(np.cumsum(weights), pick - free_weight,
                                             side="right"))
                choice = min(choice, n_sources - 1)
                while weights[choice] == 0:  # a rounding at the edge: a source that may go
                    choice -= 1
        else:  # not arrangeable: the largest source but the last, then a free item, then the last
            candidates = counts.copy()
            if last >= 0:
                candidates[last] = 0
            if candidates.max(initial=0) > 0:
                choice = int(np.argmax(candidates))
            elif free:
                choice = -1
            else:
                choice = last
        pool = pools[choice]
        item = pool[int(rng.integers(len(pool)))]
        out.append(item)
        last = take(item)
    return out


def _repeat_place(sequence: list[tuple[int, int]], item: int, *, start: int,
                  sources: Mapping[int, str], together: bool, rng: np.random.Generator) -> int:
    """Return where a repeat goes, at ``start`` or later: between two sources (``together``,
    so no block is split), or not next to another output of its own source (``spread``), when
    such a place exists; a seeded random one of them."""
    own = sources.get(item)

    def source_at(p: int) -> str | None:
        return sources.get(sequence[p][0]) if 0 <= p < len(sequence) else None

    places = list(range(start, len(sequence) + 1))
    if together:
        good = [q for q in places if q == len(sequence) or source_at(q - 1) is None
                or source_at(q - 1) != source_at(q)]
    else:
        good = [q for q in places if own is None
                or (source_at(q - 1) != own and source_at(q) != own)]
    pool = good or places
    return pool[int(rng.integers(0, len(pool)))]


def checks_place(
    plan: Sequence[tuple[int, int]],
    checks: Sequence[tuple[int, int | None]],
    *,
    seed: int,
) -> tuple[list[tuple[int, int]], list[int]]:
    """Insert attention checks among a participant's main presentations.

    ``plan`` is the main ``(item, presentation)`` list; ``checks`` the check items as
    ``(item, place)`` where ``place`` is the 1-based place among the main presentations the
    check comes before (past the end: last) or None for a random place (seeded by ``seed``, so
    the same participant always gets the same order). Returns the full ``(item, presentation)``
    list and the 0-based positions of the checks in it. A check is never shown twice.
    """
    rng = np.random.default_rng([seed, 7])
    n = len(plan)
    # Each check's place: the number of main presentations shown before it.
    places = [min(place - 1, n) if place is not None else int(rng.integers(0, n + 1))
              for _, place in checks]
    order = sorted(range(len(checks)), key=lambda k: (places[k], k))
    full: list[tuple[int, int]] = []
    positions: list[int] = []
    k = 0
    for before in range(n + 1):
        while k < len(order) and places[order[k]] == before:
            positions.append(len(full))
            full.append((checks[order[k]][0], 1))
            k += 1
        if before < n:
            full.append(tuple(plan[before]))  # type: ignore[arg-type]
    return full, positions
