"""Time the judges section (issue 27, point 5): 10 judges × 100 000 items × one question.

Run from the repository root: ``python -m bench.judges [--items 100000] [--annotators 5]
[--pool 20] [--judges 10] [--systems 5] [--seed N]``.

Data: ``items`` items of ``systems`` systems (one output of every system per source), each
rated on a 1–5 scale by ``annotators`` annotators drawn from a pool of ``pool`` people (each
item its own draw); an item's answers are its planted quality plus the annotator's noise,
rounded and clipped. ``judges`` judges answer every item: judge k adds noise growing with k (the
first close to the planted quality, the last nearly random), and the first judge has two runs
(its self-consistency). Seeded.

It times `core.results.judges.judges_records` alone with the default settings (the section a
study with judges adds to its analysis) and prints its seconds and peak memory (tracemalloc).
Target: ≤ 20 s at the default size (exits 1 when missed). Prints human-readable lines and,
LAST, one line of JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import tracemalloc
from typing import Any

import numpy as np

from core.data import QuestionData, item_columns, question_data_from_answers
from core.judges import JudgeAnswers, JudgeInfo
from core.results.judges import judges_records
from core.settings import AnalysisSettings

TARGET_S = 20.0
DOMAIN = (1.0, 2.0, 3.0, 4.0, 5.0)


def make_study(n_items: int, per_item: int, pool: int, n_systems: int, n_judges: int,
               seed: int) -> tuple[QuestionData, list[JudgeInfo], list[JudgeAnswers]]:
    """Return the question, the judges and their runs."""
    rng = np.random.default_rng(seed)
    system = np.arange(n_items) % n_systems
    source = np.arange(n_items) // n_systems
    quality = np.linspace(4.0, 2.5, n_systems)[system] + rng.normal(0, 0.7, n_items)
    names = [f"system-{k}" for k in range(n_systems)]
    ids = [f"i{n}" for n in range(n_items)]
    items = item_columns(ids, [False] * n_items, [{}] * n_items, [{}] * n_items,
                         [{}] * n_items, systems=[names[k] for k in system],
                         sources=[f"doc{s}" for s in source])
    # Each item's annotators: ``per_item`` distinct people of the pool.
    who = np.argsort(rng.random((n_items, pool)), axis=1)[:, :per_item]
    item = np.repeat(np.arange(n_items), per_item)
    participant = who.ravel()
    noise = rng.uniform(0.4, 1.2, pool)
    value = np.clip(np.rint(quality[item] + rng.normal(0, 1, item.size) * noise[participant]),
                    1, 5)
    data = question_data_from_answers(items, participant=participant, item=item,
                                      presentation=np.ones(item.size, np.int64),
                                      active_ms=np.full(item.size, 5000.0),
                                      values={"quality": value})["quality"]
    question = QuestionData("quality", data, DOMAIN)
    judges, answers = [], []
    for k in range(n_judges):
        name = f"judge-{k}"
        judges.append(JudgeInfo(name, model=f"model-{k}"))
        spread = 0.3 + 0.4 * k
        for run in ("1", "2") if k == 0 else ("1",):
            v = np.clip(np.rint(quality + rng.normal(0, spread, n_items)), 1, 5)
            answers.append(JudgeAnswers(name, run, "quality", tuple(ids), v.astype(float)))
    return question, judges, answers


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--annotators", type=int, default=5)
    parser.add_argument("--pool", type=int, default=20)
    parser.add_argument("--judges", type=int, default=10)
    parser.add_argument("--systems", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    question, judges, answers = make_study(args.items, args.annotators, args.pool, args.systems,
                                           args.judges, args.seed)
    built = time.perf_counter() - t0
    settings = AnalysisSettings()
    doc: dict[str, Any] = {}
    t0, c0 = time.perf_counter(), time.process_time()
    judges_records(doc, [question], [], judges, answers, settings)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    tracemalloc.start()
    judges_records({}, [question], [], judges, answers, settings)
    peak_mb = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    size = len(json.dumps(doc))
    print(f"study: {args.items} items × {args.annotators} annotators (pool {args.pool}), "
          f"{args.judges} judges, {args.systems} systems; built in {built:.1f} s")
    print(f"judges section: {seconds:.2f} s ({cpu:.2f} s of CPU), peak {peak_mb:.0f} MB (tracemalloc), "
          f"{len(doc['judges'])} records, {size / 1024:.0f} KiB of JSON")
    for rec in doc["judges"][:3]:
        alt = rec["alt_test"]
        print(f"  {rec['judge']}: ω={alt['winning_rate']}, ρ={alt['rho']:.3f}, "
              f"passed={alt['passed']}, τ(systems)={rec['systems']['kendall_tau']['value']}")
    ok = seconds <= TARGET_S
    print(json.dumps({"bench": "judges", "items": args.items, "annotators": args.annotators,
                      "judges": args.judges, "seconds": round(seconds, 3), "cpu_seconds": round(cpu, 3),
                      "peak_mb": round(peak_mb, 1), "json_bytes": size,
                      "target_s": TARGET_S, "ok": ok}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
