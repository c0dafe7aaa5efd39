"""Assignment design: which items a participant sees, in which order, and which twice.

Pure functions (no database), so the design can be tested exhaustively and reproduced from the
recorded seed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Design:
    items_per_participant: int  # 0 = every item
    annotators_per_item: int
    duplicates: int
    min_gap: int

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
) -> list[tuple[int, int]]:
    """Return the ordered (item id, presentation) list of one participant.

    Items are chosen among the least-assigned so far (balancing the overlap), with seeded
    random tie-breaking; the order is a seeded shuffle; `design.duplicates` non-control items
    are shown a second time (presentation 2), each at least `design.gap` positions after its
    first showing. Example: 4 items, every item, 1 duplicate with gap 2 gives e.g.
    [(3, 1), (1, 1), (4, 1), (3, 2), (2, 1)].
    """
    problems = design.problems(available=len(item_ids), controls=len(control_ids & set(item_ids)))
    if problems:
        raise ValueError("; ".join(problems))
    rng = np.random.default_rng(seed)
    counts = assigned_counts or {}
    ids = np.asarray(item_ids, dtype=np.int64)
    m = design.n_items(len(ids))
    if m < len(ids):
        # Least assigned first; items already at the overlap only when nothing else is left.
        count = np.array([counts.get(int(i), 0) for i in ids])
        full = count >= design.annotators_per_item
        order = np.lexsort((rng.random(len(ids)), count, full))
        chosen = ids[order[:m]]
    else:
        chosen = ids
    sequence = [(int(i), 1) for i in rng.permutation(chosen)]
    if design.duplicates:
        gap = design.gap
        # Candidates whose first showing leaves room for the repeat; non-control items only.
        room = [p for p, (i, _) in enumerate(sequence) if p <= m - gap and i not in control_ids]
        firsts = sorted(rng.choice(room, size=design.duplicates, replace=False).tolist())
        for item in [sequence[p][0] for p in firsts]:
            p_now = sequence.index((item, 1))
            q = int(rng.integers(p_now + gap, len(sequence) + 1))
            sequence.insert(q, (item, 2))
    return sequence


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
