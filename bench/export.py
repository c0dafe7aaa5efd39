"""Export synthetic responses in every format and show that memory stays bounded (issue 4).

Run from the repository root: ``python -m bench.export [--rows 200000 50000] [--keep]``.

Uses the configured database: ``DATABASE_URL`` (PostgreSQL) if set, else SQLite under
``CONCORD_VAR_DIR`` — and when neither is set, a fresh SQLite database in a temporary folder, so a
bench run never touches ``var/concord.sqlite3``. It prints which database it used.

For each size (default 200 000, then 50 000 responses) it creates a throwaway study through the
ORM with ``bulk_create`` in batches: 2 000 items, one annotator per 200 responses (190 first
presentations and 10 repeats each), values 0–7 with 2 % blanks, active times with 3 % missing,
and a stored placeholder results document (the bench measures exports, not analyses). Then it
writes each export to a file with the same service the command and the background jobs use
(``exports.services.export_open``) and prints, per format: seconds, data rows, bytes, peak Python
memory (``tracemalloc``, measured in a second pass because tracing slows Python down) and the
peak growth of the resident set size during the timed pass (sampled from /proc every 5 ms; each
format is exported once beforehand so that library imports are not counted).
Memory bounded means the peaks do not grow with the number of rows: the last lines compare the
two sizes, then, LAST, one line of JSON. The study is deleted afterwards unless ``--keep``.

``--study SLUG`` (issue 26, point 4) measures instead the responses CSV of an existing study on
PostgreSQL against the floor, alternated ``--rounds`` times in one run: PostgreSQL's ``COPY (…) TO
STDOUT`` of the same rows as ``bench.scale`` does it, then the command ``manage.py export SLUG
--what responses --format csv --output -`` to /dev/null (seconds and peak RSS of its process);
``--python`` adds the Python writer (`core.formats.csv_chunks` of `response_rows`, what the
command ran before) once and checks that both give the same bytes. It prints each ratio to the
floor, their median and the machine's load, then one line of JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path

if not os.environ.get("DATABASE_URL") and not os.environ.get("CONCORD_VAR_DIR"):
    os.environ["CONCORD_VAR_DIR"] = tempfile.mkdtemp(prefix="concord-bench-export-")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

import numpy as np  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.utils import timezone  # noqa: E402

from analysis.models import AnalysisRun  # noqa: E402
from annotation.models import Answer, Response  # noqa: E402
from core.results import SCHEMA  # noqa: E402
from core.settings import AnalysisSettings  # noqa: E402
from exports.services import WHATS, export_open  # noqa: E402
from studies.models import Item, Participant, Study  # noqa: E402
from studies.services import study_create  # noqa: E402

N_ITEMS = 2000
PER_ANNOTATOR = 200
REPEATS = 10
BATCH = 10_000
EXPORTS = [(what, fmt) for what, formats in WHATS.items() for fmt in formats]
PAGE = os.sysconf("SC_PAGE_SIZE")


def rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * PAGE


class RssPeak:
    """Sample the resident set size every 5 ms in a thread; `growth` = peak − start."""

    def __enter__(self):
        self.start = self.peak = rss()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, rss())

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss())
        self.growth = self.peak - self.start


def make_study(rows: int, seed: int) -> Study:
    """Create the throwaway study with `rows` responses (a multiple of PER_ANNOTATOR)."""
    owner, _ = get_user_model().objects.get_or_create(username="bench-export")
    slug = f"bench-export-{rows}"
    Study.objects.filter(slug=slug).delete()
    study = study_create(owner=owner, slug=slug, title=f"Export bench, {rows} responses",
                         preset="likert-0-7-coref")
    rng = np.random.default_rng(seed)
    Item.objects.bulk_create(
        (Item(study=study, external_id=f"doc{n:05d}", position=n,
              text=f"Passage {n}: [the committee] approved [it]; =SUM(A{n}) stays text.",
              is_control=n % 50 == 0, metrics={"MUC_F1": float(rng.random())},
              features={"silence": int(rng.integers(0, 4))}, meta={"source": "bench"})
         for n in range(N_ITEMS)), batch_size=BATCH)
    items = np.array(Item.objects.filter(study=study).order_by("position")
                     .values_list("pk", flat=True))
    n_annotators = rows // PER_ANNOTATOR
    Participant.objects.bulk_create(
        (Participant(study=study, source=Participant.Source.IMPORT, external_id=f"worker-{a}",
                     n_assigned=PER_ANNOTATOR, n_answered=PER_ANNOTATOR,
                     pseudonym_number=a + 1)
         for a in range(n_annotators)), batch_size=BATCH)
    Study.objects.filter(pk=study.pk).update(pseudonyms_issued=n_annotators)
    people = list(Participant.objects.filter(study=study).order_by("pk")
                  .values_list("pk", flat=True))
    now = timezone.now()
    question = study.primary_question
    batch: list[tuple[Response, float | None]] = []

    def flush() -> None:
        # Each response with its answer to the study's question, as the app stores them.
        stored = Response.objects.bulk_create([r for r, _ in batch])
        Answer.objects.bulk_create(
            Answer(response_id=r.pk, question=question, value=value,
                   missing="" if value is not None else Answer.Missing.SKIPPED)
            for r, (_, value) in zip(stored, batch, strict=True))
        batch.clear()

    firsts = PER_ANNOTATOR - REPEATS
    for pid in people:
        chosen = rng.choice(items, firsts, replace=False)
        values = rng.integers(0, 8, PER_ANNOTATOR).astype(float)
        blanks = rng.random(PER_ANNOTATOR) < 0.02
        times = rng.lognormal(9.5, 0.5, PER_ANNOTATOR).astype(int)
        timeless = rng.random(PER_ANNOTATOR) < 0.03
        shown = [(int(i), 1) for i in chosen] + [(int(i), 2) for i in chosen[:REPEATS]]
        for position, (item, presentation) in enumerate(shown):
            batch.append((Response(
                participant_id=pid, item_id=item, presentation=presentation, position=position,
                active_ms=None if timeless[position] else int(times[position]),
                source=Response.Source.IMPORT, received_at=now),
                None if blanks[position] else float(values[position])))
            if len(batch) >= BATCH:
                flush()
    if batch:
        flush()
    AnalysisRun.objects.create(
        study=study, status=AnalysisRun.Status.DONE, progress=100, settings=AnalysisSettings().to_dict(),
        finished_at=now, results={
            "schema": SCHEMA, "note": "placeholder document of bench.export",
            "study": {"slug": slug, "title": study.title, "run": None, "code_version": "bench"},
            "settings": AnalysisSettings().to_dict(), "annotators": [f"A{n + 1}" for n in range(len(people))]})
    return study


def run_export(study: Study, what: str, fmt: str, folder: Path, *, traced: bool) -> dict:
    target = folder / f"{study.slug}-{what}.{fmt}"
    if traced:
        tracemalloc.start()
    started = time.perf_counter()
    with RssPeak() as memory:
        export = export_open(study=study, what=what, fmt=fmt)
        size = 0
        with open(target, "wb") as out:
            for chunk in export.chunks:
                out.write(chunk)
                size += len(chunk)
    seconds = time.perf_counter() - started
    figures = {"seconds": seconds, "rows": export.rows, "bytes": size,
               "rss_growth_mb": memory.growth / 2**20}
    if traced:
        figures["peak_traced_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    target.unlink()
    return figures


def against_copy(slug: str, rounds: int, python: bool) -> int:
    """The responses CSV of an existing study against PostgreSQL's COPY TO, alternated."""
    import hashlib
    import statistics
    import subprocess

    from bench.scale import export_floor
    from core.formats import csv_chunks
    from exports.selectors import RESPONSE_COLUMNS, response_columns, response_rows

    if connection.vendor != "postgresql":
        raise SystemExit("--study needs PostgreSQL (DATABASE_URL)")
    url = os.environ["DATABASE_URL"]
    command = [sys.executable, "manage.py", "export", slug, "--what", "responses", "--format",
               "csv", "--output", "-"]

    root = Path(__file__).resolve().parent.parent

    def timed_command() -> tuple[float, float]:
        """Seconds and peak RSS (MB) of one export command writing to /dev/null."""
        started = time.perf_counter()
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL, cwd=root)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode:
            raise SystemExit(f"the export command failed ({child.returncode})")
        return time.perf_counter() - started, usage.ru_maxrss / 1024

    print(f"study {slug!r} on {connection.settings_dict['NAME']}; load {os.getloadavg()}")
    figures: list[dict[str, float]] = []
    for n in range(rounds):
        floor = export_floor(url)
        seconds, peak = timed_command()
        figures.append({"floor_s": floor, "export_s": seconds, "peak_mb": peak,
                        "ratio": seconds / floor})
        print(f"  round {n + 1}: COPY TO {floor:.2f} s, export {seconds:.2f} s "
              f"(peak RSS {peak:.0f} MB): {seconds / floor:.2f}x", flush=True)
    result: dict[str, object] = {
        "study": slug, "rounds": figures, "load": os.getloadavg(),
        "median_ratio": round(statistics.median(f["ratio"] for f in figures), 2)}
    if python:
        study = Study.objects.get(slug=slug)
        columns = response_columns(study=study)
        started = time.perf_counter()
        before = hashlib.sha256()
        for chunk in csv_chunks(columns, response_rows(
                study=study, labels=len(columns) > len(RESPONSE_COLUMNS))):
            before.update(chunk)
        result["python_writer_s"] = time.perf_counter() - started
        after = hashlib.sha256(subprocess.run(command, check=True, capture_output=True,
                                              cwd=root).stdout)
        result["same_bytes"] = before.hexdigest() == after.hexdigest()
        print(f"  the Python writer: {result['python_writer_s']:.2f} s; the same bytes: "
              f"{result['same_bytes']}")
    print(f"median ratio to COPY TO: {result['median_ratio']}x (target <= 3); load "
          f"{os.getloadavg()}")
    print(json.dumps(result))
    return 0 if result.get("same_bytes", True) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[200_000, 50_000],
                        help="study sizes in responses (multiples of 200)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", action="store_true", help="keep the bench studies")
    parser.add_argument("--study", help="an existing study: its responses CSV against COPY TO")
    parser.add_argument("--rounds", type=int, default=3, help="with --study: alternations")
    parser.add_argument("--python", action="store_true",
                        help="with --study: time the Python writer too and compare the bytes")
    args = parser.parse_args(argv)
    if args.study:
        return against_copy(args.study, args.rounds, args.python)
    db = connection.settings_dict
    print(f"database: {connection.vendor} {db['NAME']}"
          + (f" on {db.get('HOST') or 'localhost'}" if connection.vendor != "sqlite" else ""))
    print(f"exports: {', '.join(f'{w}.{f}' for w, f in EXPORTS)}; written under a temporary folder")
    call_command("migrate", interactive=False, verbosity=0)
    results: dict[int, dict[str, dict]] = {}
    with tempfile.TemporaryDirectory(prefix="concord-exports-") as tmp:
        for rows in args.rows:
            rows -= rows % PER_ANNOTATOR
            started = time.perf_counter()
            with transaction.atomic():
                study = make_study(rows, args.seed)
            print(f"\n{rows} responses ({rows // PER_ANNOTATOR} annotators, {N_ITEMS} items) "
                  f"created in {time.perf_counter() - started:.1f} s")
            print(f"  {'export':<16} {'seconds':>8} {'rows':>8} {'bytes':>12} "
                  f"{'peak py MB':>10} {'RSS +MB':>8}")
            if not results:  # warm-up: library imports and caches are not the export's memory
                for what, fmt in EXPORTS:
                    run_export(study, what, fmt, Path(tmp), traced=False)
            results[rows] = {}
            for what, fmt in EXPORTS:
                timed = run_export(study, what, fmt, Path(tmp), traced=False)
                traced = run_export(study, what, fmt, Path(tmp), traced=True)
                figures = {**timed, "peak_traced_mb": traced["peak_traced_mb"]}
                results[rows][f"{what}.{fmt}"] = figures
                print(f"  {what + '.' + fmt:<16} {figures['seconds']:8.2f} {figures['rows']:8d} "
                      f"{figures['bytes']:12d} {figures['peak_traced_mb']:10.1f} "
                      f"{figures['rss_growth_mb']:8.1f}")
            if not args.keep:
                study.delete()
    sizes = sorted(results)
    bounded = True
    if len(sizes) >= 2:
        small, large = sizes[0], sizes[-1]
        print(f"\npeak Python memory, {large} vs {small} responses ({large / small:.0f}x the rows):")
        for name in results[large]:
            a, b = results[small][name]["peak_traced_mb"], results[large][name]["peak_traced_mb"]
            # Bounded: the peak grows far less than the rows (allow a fixed few MB of slack).
            ok = b <= 1.5 * a + 5
            bounded &= ok
            print(f"  {name:<16} {a:6.1f} MB -> {b:6.1f} MB  {'bounded' if ok else 'GROWS'}")
    print(f"  memory bounded: {'yes' if bounded else 'NO'}; EXPORTS_DIR would be "
          f"{settings.EXPORTS_DIR}")
    print(json.dumps({"database": connection.vendor, "bounded": bounded, "results": {
        str(rows): {name: {k: round(v, 3) if isinstance(v, float) else v for k, v in f.items()}
                    for name, f in by.items()} for rows, by in results.items()}}))
    return 0 if bounded else 1


if __name__ == "__main__":
    sys.exit(main())
