"""Data sets of the competence-model tests: Dawid and Skene 1979's table 1 and a planted crowd."""

from __future__ import annotations

import numpy as np

from core.stats._types import LongRatings

# Dawid and Skene 1979, table 1: 45 patients, 4 classes (1-4), 5 observers; observer 1 assessed
# every patient three times. One string per patient: observer 1's three answers, then observers
# 2-5 (transcribed from the paper's table; 315 answers in all).
_TABLE_1 = """
1111111 3334334 1122122 2223121 2223222 2223322 1222111 3333433 2222223 2322223
4444444 2223343 1111111 2223212 1211111 1112111 1111111 1111111 2222221 2221322
2222222 2222221 2223222 2212222 1111111 1111111 2322222 1111111 1111111 1121121
1111111 3333233 1111111 2222222 2223232 4334343 2212232 2323233 3333432 1111111
1111111 1212111 2322222 1211111 2222222
""".split()

DS_1979 = np.array(
    [
        (patient, observer, int(answer))
        for patient, row in enumerate(_TABLE_1)
        for observer, answer in zip((0, 0, 0, 1, 2, 3, 4), row, strict=True)
    ]
)


def ds_1979_ratings() -> tuple[LongRatings, list[LongRatings]]:
    """Return the first answer of every observer, and observer 1's second and third as repeats."""
    first, again, third = [], [], []
    for patient, row in enumerate(_TABLE_1):
        first.extend((patient, obs, int(row[pos])) for obs, pos in ((0, 0), (1, 3), (2, 4),
                                                                     (3, 5), (4, 6)))
        again.append((patient, 0, int(row[1])))
        third.append((patient, 0, int(row[2])))

    def long(rows: list[tuple[int, int, int]]) -> LongRatings:
        arr = np.array(rows)
        return LongRatings(item=arr[:, 0], annotator=arr[:, 1], value=arr[:, 2].astype(float),
                           n_items=45, n_annotators=5)

    return long(first), [long(again), long(third)]


def planted_crowd(seed: int = 0, n_items: int = 60, k: int = 5) -> dict:
    """Return a crowd with six honest annotators, a uniform spammer (6) and an adversary (7).

    Honest annotator j answers the true value with probability 0.9 − 0.05 j, else a neighbouring
    value; the spammer answers uniformly at random; the adversary answers the mirror value
    k − 1 − truth. Each annotator skips an item with probability 0.15. Rows are sorted by
    (annotator, value, item) (crowd-kit's MACE needs workers and labels to first appear in sorted
    order, see crowdkit_vectors.py).
    """
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, k, n_items)
    rows = []
    for j in range(6):
        for i in range(n_items):
            if rng.random() < 0.15:
                continue
            if rng.random() < 0.9 - 0.05 * j:
                v = truth[i]
            else:
                v = int(np.clip(truth[i] + rng.choice([-1, 1]), 0, k - 1))
            rows.append((i, j, int(v)))
    for i in range(n_items):
        if rng.random() >= 0.15:
            rows.append((i, 6, int(rng.integers(0, k))))
        if rng.random() >= 0.15:
            rows.append((i, 7, int(k - 1 - truth[i])))
    rows.sort(key=lambda r: (r[1], r[2], r[0]))
    return {"rows": np.array(rows), "truth": truth, "n_items": n_items, "n_annotators": 8, "k": k}


def as_long(rows: np.ndarray, n_items: int, n_annotators: int) -> LongRatings:
    """Return (item, annotator, value) rows as `LongRatings`."""
    rows = np.asarray(rows)
    return LongRatings(item=rows[:, 0], annotator=rows[:, 1], value=rows[:, 2].astype(float),
                       n_items=n_items, n_annotators=n_annotators)
