"""Time the comparative-judgment statistics on an arena-sized pairwise study.

Run from the repository root: ``python -m bench.comparisons [--judgments 100000] [--systems 50]
[--annotators 200] [--resamples 1000] [--seed N] [--results [--sources 40]]``.

``--results`` times the results document's comparison sections instead (the same judgments,
each of two outputs of one source, ``--sources`` sources: the stored choices turned into arrays,
then every section on the outputs and the systems).

Data: ``judgments`` pairwise judgments of two different systems drawn at random, the winner
drawn from Bradley–Terry with planted log-strengths evenly spaced from 1.5 to −1.5, one in ten
judgments a tie, each judgment by one of ``annotators``; seeded.

It times, one after another: the counts, the Bradley–Terry (Davidson) fit with ``resamples``
bootstrap resamples, ranks and the win-probability matrix, split-half reliability over 100
splits, and every annotator's circular triads, then their sum under ``tracemalloc`` for the peak
memory.  Target: ≤ 20 s for the default size (issue 25; exits 1 when missed).  Prints
human-readable lines and, LAST, one line of JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np

from core.stats.comparisons import (
    bootstrap_pairwise,
    circular_triads,
    pairwise_counts,
    split_half_pairwise,
)

TARGET_S = 20.0  # issue 25


def make_study(n_judgments: int, n_systems: int, n_annotators: int, seed: int
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Return (winner, loser, tie, annotator, planted log-strength)."""
    rng = np.random.default_rng(seed)
    theta = np.linspace(1.5, -1.5, n_systems)
    first = rng.integers(0, n_systems, n_judgments)
    second = (first + rng.integers(1, n_systems, n_judgments)) % n_systems
    first_wins = rng.random(n_judgments) < 1 / (1 + np.exp(theta[second] - theta[first]))
    winner = np.where(first_wins, first, second)
    loser = np.where(first_wins, second, first)
    tie = rng.random(n_judgments) < 0.1
    annotator = rng.integers(0, n_annotators, n_judgments)
    return winner, loser, tie, annotator, theta


def results_level(n_judgments: int, n_systems: int, n_sources: int, n_annotators: int,
                  resamples: int, seed: int) -> dict[str, float]:
    """Time the results document's comparison sections (`core.results.comparisons`) on a
    pairwise study of ``n_systems`` × ``n_sources`` outputs: the stored choices turned into
    arrays as the loader does, then every section on both levels."""
    from core.results.comparisons import comparison_records, judgments_from_choices
    from core.settings import AnalysisSettings

    rng = np.random.default_rng(seed)
    theta = np.linspace(1.5, -1.5, n_systems)
    systems = [f"sys{k}" for k in range(n_systems)]
    outputs = [f"doc{s}-{name}" for s in range(n_sources) for name in systems]
    of_system = np.tile(np.arange(n_systems), n_sources)
    source = rng.integers(0, n_sources, n_judgments)
    first = rng.integers(0, n_systems, n_judgments)
    second = (first + rng.integers(1, n_systems, n_judgments)) % n_systems
    first_wins = rng.random(n_judgments) < 1 / (1 + np.exp(theta[second] - theta[first]))
    annotator = rng.integers(0, n_annotators, n_judgments)
    a = source * n_systems + first
    b = source * n_systems + second
    rows = [(f"A{int(p) + 1}", f"cmp-{min(x, y)}-{max(x, y)}", 0.0 if w else 1.0,
             {"shown": [outputs[x], outputs[y]], "pick": outputs[x] if w else outputs[y],
              "strength": ""})
            for p, x, y, w in zip(annotator.tolist(), a.tolist(), b.tolist(),
                                  first_wins.tolist(), strict=True)]
    metric = theta[of_system] + rng.normal(0, 0.5, of_system.size)
    seconds: dict[str, float] = {}
    seconds["results_arrays"], judged = timed(lambda: judgments_from_choices(
        "pref", "pairwise", outputs=outputs, systems=[systems[k] for k in of_system],
        metrics={"metric": metric.tolist()}, rows=rows))
    settings = AnalysisSettings.from_mapping({"comparisons_bootstrap": resamples, "seed": seed})
    doc: dict[str, Any] = {}
    seconds["results_sections"], _ = timed(lambda: comparison_records(doc, [judged], settings))
    strength = {r["name"]: r["strength"] for r in doc["comparison_scores"]
                if r["level"] == "system"}
    seconds["results_recovered"] = float(np.corrcoef([strength[n] for n in systems], theta)[0, 1])
    return seconds


def timed(step: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = step()
    return time.perf_counter() - start, value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--judgments", type=int, default=100_000)
    parser.add_argument("--systems", type=int, default=50)
    parser.add_argument("--annotators", type=int, default=200)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--results", action="store_true",
                        help="time the results document's comparison sections instead "
                             "(outputs: systems × --sources)")
    parser.add_argument("--sources", type=int, default=40)
    args = parser.parse_args(argv)
    if args.results:
        print(f"comparisons (results document): {args.judgments} pairwise judgments of "
              f"{args.systems} systems × {args.sources} sources by {args.annotators} "
              f"annotators, {args.resamples} bootstrap resamples")
        seconds = results_level(args.judgments, args.systems, args.sources, args.annotators,
                                args.resamples, args.seed)
        recovered = seconds.pop("results_recovered")
        total = sum(seconds.values())
        for name, value in seconds.items():
            print(f"  {name:<24} {value:7.2f} s")
        print(f"  total                    {total:7.2f} s (target ≤ {TARGET_S:.0f} s); "
              f"system strengths correlate {recovered:.4f} with the planted ones")
        print(json.dumps({"judgments": args.judgments, "systems": args.systems,
                          "sources": args.sources, "annotators": args.annotators,
                          "resamples": args.resamples,
                          "seconds": {k: round(v, 3) for k, v in seconds.items()},
                          "total_s": round(total, 3),
                          "recovered_correlation": round(recovered, 5),
                          "target_s": TARGET_S}))
        sized = args.judgments >= 100_000 and args.systems >= 50 and args.resamples >= 1000
        return 1 if sized and total > TARGET_S else 0
    winner, loser, tie, annotator, theta = make_study(args.judgments, args.systems,
                                                      args.annotators, args.seed)
    n = args.systems
    print(f"comparisons: {args.judgments} pairwise judgments of {n} systems by "
          f"{args.annotators} annotators, {args.resamples} bootstrap resamples")

    def analyse() -> dict[str, float]:
        seconds: dict[str, float] = {}
        seconds["counts"], _ = timed(lambda: pairwise_counts(winner, loser, tie, n_outputs=n))
        seconds["bradley_terry_bootstrap"], scores = timed(lambda: bootstrap_pairwise(
            winner, loser, tie, n_outputs=n, n_resamples=args.resamples,
            rng=np.random.default_rng(args.seed)))
        seconds["split_half"], _ = timed(lambda: split_half_pairwise(
            winner, loser, tie, annotator, n_outputs=n, rng=np.random.default_rng(args.seed)))
        seconds["circular_triads"], _ = timed(lambda: circular_triads(
            winner, loser, tie, annotator, n_outputs=n, n_annotators=args.annotators))
        recovered = float(np.corrcoef(scores.fit.log_strength, theta)[0, 1])
        seconds["recovered_correlation"] = recovered
        return seconds

    seconds = analyse()
    recovered = seconds.pop("recovered_correlation")
    total = sum(seconds.values())
    for name, value in seconds.items():
        print(f"  {name:<24} {value:7.2f} s")
    print(f"  total                    {total:7.2f} s (target ≤ {TARGET_S:.0f} s); strengths "
          f"correlate {recovered:.4f} with the planted ones")
    tracemalloc.start()
    analyse()
    peak_mb = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    print(f"  peak memory (traced, second run): {peak_mb:.0f} MB")
    sized = args.judgments >= 100_000 and args.systems >= 50 and args.resamples >= 1000
    result = {"judgments": args.judgments, "systems": n, "annotators": args.annotators,
              "resamples": args.resamples, "seconds": {k: round(v, 3) for k, v in seconds.items()},
              "total_s": round(total, 3), "peak_mb": round(peak_mb, 1),
              "recovered_correlation": round(recovered, 5), "target_s": TARGET_S}
    print(json.dumps(result))
    return 1 if sized and total > TARGET_S else 0


if __name__ == "__main__":
    sys.exit(main())
