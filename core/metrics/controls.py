"""Random control pairs for similarity studies (Solomon et al. 2021, §4).

A control pair joins the `text_a` of one pair with the `text_b` of another, so it has no
semantic relation, built from the study's own sentences. Sentences are taken as distinct texts:
a control never pairs a text with itself, nor two texts that appear together in any pair of the
study (in either order), and no control pair is produced twice. Draws are uniform over the
allowed (distinct text_a, distinct text_b) combinations, without replacement, from the `rng`
given, so a seed reproduces them.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

# Below this many candidate combinations we enumerate them all; above, rejection sampling
# (the allowed share is then close to 1, so it stops quickly).
_ENUMERATE_LIMIT = 1_000_000


def random_control_pairs(
    pairs: Sequence[tuple[Hashable, str, str]], n: int, rng: np.random.Generator
) -> list[tuple[str, str, tuple[Hashable, Hashable]]]:
    """Return `n` control pairs (text_a, text_b, (id of text_a's pair, id of text_b's pair)).

    The source ids name the first pair (in input order) holding that text in that role.
    Raises ValueError when fewer than `n` allowed combinations exist.

    Example: pairs [(1, "A", "A'"), (2, "B", "B'")] allow only ("A", "B'") and ("B", "A'").
    """
    if n < 0:
        raise ValueError(f"n must be ≥ 0, got {n}")
    source_a: dict[str, Hashable] = {}
    source_b: dict[str, Hashable] = {}
    related: set[frozenset[str]] = set()
    for pair_id, text_a, text_b in pairs:
        source_a.setdefault(text_a, pair_id)
        source_b.setdefault(text_b, pair_id)
        related.add(frozenset((text_a, text_b)))
    texts_a = list(source_a)
    texts_b = list(source_b)
    set_b = set(texts_b)
    index_a = set(texts_a)
    # forbidden (a, b) combinations: a == b, or {a, b} a pair of the study
    forbidden = {(t, t) for t in index_a & set_b}
    for rel in related:
        items = tuple(rel)
        x, y = (items[0], items[0]) if len(items) == 1 else items
        for a, b in ((x, y), (y, x)):
            if a in index_a and b in set_b:
                forbidden.add((a, b))
    allowed = len(texts_a) * len(texts_b) - len(forbidden)
    if n > allowed:
        raise ValueError(
            f"cannot make {n} control pairs: only {allowed} combinations of a text_a with an "
            f"unrelated text_b exist among {len(pairs)} pairs"
        )
    if n == 0:
        return []

    def result(a: str, b: str) -> tuple[str, str, tuple[Hashable, Hashable]]:
        return (a, b, (source_a[a], source_b[b]))

    if len(texts_a) * len(texts_b) <= _ENUMERATE_LIMIT:
        candidates = [(a, b) for a in texts_a for b in texts_b if (a, b) not in forbidden]
        chosen = rng.choice(len(candidates), size=n, replace=False)
        return [result(*candidates[i]) for i in chosen]
    picked: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()
    while len(picked) < n:
        a = texts_a[int(rng.integers(len(texts_a)))]
        b = texts_b[int(rng.integers(len(texts_b)))]
        if (a, b) in forbidden or (a, b) in seen:
            continue
        seen.add((a, b))
        picked.append((a, b))
    return [result(a, b) for a, b in picked]
