"""Time the systems analysis on a WMT-campaign-sized study, beside the rest of the analysis.

Run from the repository root: ``python -m bench.systems [--systems 15] [--sources 2000]
[--annotators 3] [--seed N] [--skip-rest]``.

Data: ``systems × sources`` items (one output of every system for every source), each rated by
every annotator on a 1–5 scale: the system's planted quality (evenly spaced, the last two tied),
the source's difficulty, the annotator's bias and noise, rounded and clipped; an item metric
that follows the quality loosely and a system-level metric imported per system; seeded.  The
default, 15 × 2000 × 3 = 90 000 answers, is the size of one WMT language pair (issue 24).

It builds the whole results document with the default settings and prints the seconds of
every section (``SectionClock``), the systems sections' time beside the rest of the analysis and
its ratio to it (the baseline: what the study costs without systems), then the systems
sections alone under ``tracemalloc`` for their peak memory.  Target: ≤ 30 s and ≤ 1 GB for the
systems sections at the default size (exits 1 when missed).  Prints human-readable lines and,
LAST, one line of JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import tracemalloc
from dataclasses import replace

import numpy as np

from core.data import QuestionData, item_columns, question_data_from_answers
from core.results import SectionClock, build_results
from core.results.build import analysed_data
from core.results.systems import SYSTEM_SECTIONS, systems_records
from core.settings import AnalysisSettings

TARGET_S, TARGET_MB = 30.0, 1024.0
DOMAIN = (1.0, 2.0, 3.0, 4.0, 5.0)


def make_study(n_systems: int, n_sources: int, n_annotators: int, seed: int) -> QuestionData:
    """Return the study's one question: every annotator rates every system's output of every
    source."""
    rng = np.random.default_rng(seed)
    quality = np.linspace(4.2, 2.4, n_systems)
    if n_systems >= 2:
        quality[-1] = quality[-2]  # a planted tie
    item_system = np.tile(np.arange(n_systems), n_sources)
    item_source = np.repeat(np.arange(n_sources), n_systems)
    n_items = item_system.size
    truth = quality[item_system] + rng.normal(0, 0.5, n_sources)[item_source]
    metric = truth + rng.normal(0, 0.6, n_items)
    names = [f"system-{k:02d}" for k in range(n_systems)]
    items = item_columns([f"i{n}" for n in range(n_items)], np.zeros(n_items, bool),
                         [{"chrf": float(v)} for v in metric], [{}] * n_items, [{}] * n_items,
                         systems=[names[k] for k in item_system],
                         sources=[f"doc{s:05d}" for s in item_source])
    items = replace(items, system_scores={"bleu": {n: float(40 - 1.5 * k + rng.normal(0, 1))
                                                   for k, n in enumerate(names)}})
    participant = np.repeat(np.arange(n_annotators), n_items)
    item = np.tile(np.arange(n_items), n_annotators)
    bias = rng.normal(0, 0.3, n_annotators)
    value = np.clip(np.rint(truth[item] + bias[participant] + rng.normal(0, 0.8, item.size)),
                    1, 5)
    data = question_data_from_answers(items, participant=participant, item=item,
                                      presentation=np.ones(item.size, np.int64),
                                      active_ms=rng.uniform(2000, 9000, item.size),
                                      values={"quality": value})
    return QuestionData("quality", data["quality"], DOMAIN)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", type=int, default=15)
    parser.add_argument("--sources", type=int, default=2000)
    parser.add_argument("--annotators", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-rest", action="store_true",
                        help="time the systems sections only, not the whole document")
    args = parser.parse_args(argv)
    question = make_study(args.systems, args.sources, args.annotators, args.seed)
    answers = int(np.count_nonzero(~np.isnan(question.data.value)))
    print(f"systems analysis: {args.systems} systems × {args.sources} sources × "
          f"{args.annotators} annotators = {answers} answers, seed {args.seed}")
    settings = AnalysisSettings()
    result: dict[str, object] = {"systems": args.systems, "sources": args.sources,
                                 "annotators": args.annotators, "answers": answers}
    if not args.skip_rest:
        clock = SectionClock()
        started = time.perf_counter()
        build_results([question], settings=settings, study={"slug": "bench", "title": "B"},
                      clock=clock)
        total = time.perf_counter() - started
        systems_s = clock.seconds.get("systems", 0.0)
        rest = total - systems_s
        print(f"  whole document: {total:7.2f} s")
        for name, seconds in clock.rounded(2).items():
            print(f"    {name:<16} {seconds:7.2f} s")
        print(f"  systems sections {systems_s:.2f} s beside the rest of the analysis "
              f"{rest:.2f} s: ratio {systems_s / rest:.2f}")
        result.update(total_s=round(total, 2), systems_s=round(systems_s, 2),
                      rest_s=round(rest, 2), ratio=round(systems_s / rest, 3))
    data = analysed_data(question.data, settings)
    doc: dict[str, list[dict[str, object]]] = {name: [] for name in SYSTEM_SECTIONS}
    started = time.perf_counter()
    systems_records(doc, "quality", "raw", data, data.value, settings)
    alone = time.perf_counter() - started
    tracemalloc.start()
    doc = {name: [] for name in SYSTEM_SECTIONS}
    systems_records(doc, "quality", "raw", data, data.value, settings)
    peak_mb = tracemalloc.get_traced_memory()[1] / 2 ** 20
    tracemalloc.stop()
    top = [r["system"] for r in doc["systems"][:3]]
    print(f"  systems sections alone (raw scale): {alone:.2f} s, peak {peak_mb:.0f} MB "
          f"(targets ≤ {TARGET_S:.0f} s, ≤ {TARGET_MB:.0f} MB); top three {', '.join(map(str, top))}")
    result.update(systems_alone_s=round(alone, 2), peak_mb=round(peak_mb, 1))
    print(json.dumps(result))
    sized = (args.systems, args.sources, args.annotators) == (15, 2000, 3)
    return 1 if sized and (alone > TARGET_S or peak_mb > TARGET_MB) else 0


if __name__ == "__main__":
    sys.exit(main())
