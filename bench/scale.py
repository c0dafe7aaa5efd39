"""A crowd-sized study end to end: import, analysis, dashboard, export (issue 15).

Run from the repository root: ``python -m bench.scale --answers 1e6`` (PostgreSQL only; never
collected by pytest, never run in CI).

It generates the study of the issue at the size given: N/10 sentence pairs (items CSV with
``text_a``, ``text_b``, the seven similarity metrics and both sentiments, so nothing is computed
on import) rated 1–5 ten times each by N/500 annotators (long CSV: annotator, item, value,
duration_ms, position), in a temporary folder. It creates a database of its own
(``--database``, default ``concord_scale``, on the server of ``DATABASE_URL`` or
``postgres://postgres@127.0.0.1:5432``) after checking that the server's disk has room
(about 2 kB per answer), runs ``migrate``, and times, each step in a child process whose peak
resident memory is read from ``wait4``:

1. ``import_items``;
2. ``import_responses --format long``, and beside it the COPY floor: the same rows COPYed into
   scratch copies of the response and answer tables (same indexes, same foreign keys);
3. ``analyze`` with the run's own figures (loading, each section, storing the item records, peak
   memory; a failure and its time are recorded and the bench goes on), then ``analyze
   --fanout``: the run's section groups as the tasks of a worker cluster, run one after the
   other in one process, each timed (`analysis.sections`): the total work, the critical path
   (the longest chain of tasks: what a cluster of workers would take; issue 26 asks ≤ 60 s at
   10⁷ answers) and the longest tasks;
4. the results dashboard rendered for the owner (Django's test client);
5. ``export --what responses --format csv`` against PostgreSQL's ``COPY (…) TO STDOUT`` of the
   same join.

It prints figures and ratios against the issue's targets, then, LAST, one line of JSON; then it
drops its database (``--keep`` keeps it).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import numpy as np
import psycopg

ROOT = Path(__file__).resolve().parent.parent
BYTES_PER_ANSWER = 2000  # tables, indexes, the floor's copies and the files, with room to spare
SIMILARITY = ("bleu", "chrf", "rouge1", "rouge2", "rougeL", "overlap", "bleu1")
SLUG = "scale"
TARGETS = {"import_ratio": 2.0, "import_1e7_s": 300.0, "analysis_1e6_s": 60.0,
           "analysis_1e6_gb": 2.0, "analysis_1e7_s": 600.0, "analysis_1e7_gb": 6.0,
           "critical_path_s": 60.0}


def database_urls(name: str) -> tuple[str, str]:
    """Return (the bench database's URL, the maintenance database's URL)."""
    base = urlsplit(os.environ.get("DATABASE_URL") or "postgres://postgres@127.0.0.1:5432/postgres")
    return (urlunsplit(base._replace(path=f"/{name}")),
            urlunsplit(base._replace(path="/postgres")))


def generate(folder: Path, answers: int, seed: int = 0) -> tuple[Path, Path, int, int]:
    """Write items.csv and responses.csv; return their paths, the items and the annotators."""
    n_items, n_annotators = max(1, answers // 10), max(10, answers // 500)
    rng = np.random.default_rng(seed)
    items = folder / "items.csv"
    with items.open("w") as out:
        out.write("id,text_a,text_b," + ",".join(f"metric:{m}" for m in SIMILARITY)
                  + ",meta:sentiment_a,meta:sentiment_b\n")
        metrics = rng.random((n_items, len(SIMILARITY))).round(4)
        for i in range(n_items):
            out.write(f"p{i},The cat {i} sat on the mat.,A cat {i} was sitting on a mat.,"
                      + ",".join(map(str, metrics[i])) + ",0.1,-0.2\n")
    responses = folder / "responses.csv"
    per = np.zeros(n_annotators, dtype=np.int64)
    chunk = 100_000
    with responses.open("w") as out:
        out.write("annotator,item,value,duration_ms,position\n")
        for start in range(0, n_items, chunk // 10):
            stop = min(n_items, start + chunk // 10)
            n = (stop - start) * 10
            values = rng.integers(1, 6, n)
            durations = rng.integers(1000, 60_000, n)
            lines = []
            for k in range(n):
                i = start + k // 10
                a = (i * 10 + k % 10) % n_annotators  # ten different annotators per item
                lines.append(f"w{a},p{i},{values[k]},{durations[k]},{per[a]}\n")
                per[a] += 1
            out.writelines(lines)
    return items, responses, n_items, n_annotators


def run(step: str, args: list[str], env: dict[str, str], *, check: bool = True,
        timeout: float | None = None) -> dict:
    """Run a child process; return its wall time, peak RSS (MB) and outcome.

    A child still running after `timeout` seconds is killed and recorded as failed.
    """
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        child = subprocess.Popen(args, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        timed_out = False
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if timeout is not None and time.perf_counter() - started > timeout:
                child.kill()
                timed_out = True
                _, status, usage = os.wait4(child.pid, 0)
                break
            time.sleep(0.05)
        child.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.perf_counter() - started
        out.seek(0)
        text = out.read().decode(errors="replace")
        if timed_out:
            text += f"\ntimed out after {timeout:.0f} s (--timeout) and killed"
    figures = {"step": step, "seconds": round(seconds, 2), "peak_mb": round(usage.ru_maxrss / 1024),
               "ok": child.returncode == 0}
    lines = text.strip().splitlines()
    # A figures line (TIMINGS, JSON) is kept whole; any other last line is cut to 300 characters.
    figures["last_line"] = (lines[-1] if lines[-1].startswith("TIMINGS ") else lines[-1][:300]) \
        if lines else ""
    if figures["last_line"].startswith("TIMED "):
        # The command's own time, without the child's start-up (seconds of Django imports).
        figures["process_s"] = figures["seconds"]
        figures["seconds"] = round(float(figures["last_line"].split()[1]), 2)
        figures["last_line"] = lines[-2][:300] if len(lines) > 1 else ""
    if child.returncode != 0:
        figures["error"] = text.strip().splitlines()[-1][:300] if text.strip() else "failed"
    print(f"  {step}: {figures['seconds']:.1f} s, peak {figures['peak_mb']} MB"
          + ("" if figures["ok"] else f", FAILED: {figures['error']}"), flush=True)
    if child.returncode != 0:
        if check:
            print(text[-3000:], file=sys.stderr)
            raise SystemExit(f"{step} failed")
    return figures


def manage(*args: str) -> list[str]:
    return [sys.executable, "manage.py", *args]


def timed(*args: str) -> list[str]:
    """A management command run in a child that times it without Django's start-up."""
    code = ("import sys, time\nfrom django.core.management import call_command\n"
            f"args = {list(args)!r}\nstarted = time.perf_counter()\ncall_command(*args)\n"
            "sys.stdout.flush()\nprint('TIMED', time.perf_counter() - started)")
    return manage("shell", "-c", code)


SETUP = """
from django.contrib.auth import get_user_model
from studies.services import study_create
owner = get_user_model().objects.create_superuser("scale", "scale@example.org", "scale-pass-1")
study_create(owner=owner, slug="scale", title="Scale bench", preset="similarity-1-5")
"""

RUN_TIMINGS = """
import json
from analysis.models import AnalysisRun
run = AnalysisRun.objects.filter(study__slug="scale").order_by("-id").first()
t = run.timings if run else {}
top = [[k, round(v, 1)] for k, v in (run.sections_by_time if run else [])[:6]]
print("TIMINGS", json.dumps({k: t.get(k) for k in ("load_s", "analyses_s", "store_s",
                                                   "peak_rss_mb", "fanout")} | {"sections": top}))
"""

DASHBOARD = """
import time
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from django.conf import settings
settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
# No collectstatic here: plain static storage, so the page renders without a manifest.
settings.STORAGES = {**settings.STORAGES, "staticfiles": {
    "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}}
client = Client()
client.force_login(get_user_model().objects.get(username="scale"))
url = reverse("analysis:dashboard", args=["scale"])
client.get(url)
started = time.perf_counter()
response = client.get(url)
print("DASHBOARD", response.status_code, time.perf_counter() - started)
"""


def floor_copy(url: str) -> float:
    """COPY the study's stored responses and answers into scratch copies with the same indexes
    and foreign keys; return the seconds of the two COPYs (the import's floor)."""
    with psycopg.connect(url, autocommit=True) as conn, tempfile.TemporaryDirectory() as tmp:
        files = {t: Path(tmp) / f"{t}.copy" for t in ("annotation_response", "annotation_answer")}
        for table, path in files.items():
            with path.open("wb") as out, conn.cursor().copy(f"COPY {table} TO STDOUT") as copy:
                for data in copy:
                    out.write(data)
        conn.execute("DROP TABLE IF EXISTS floor_answer, floor_response")
        conn.execute("CREATE TABLE floor_response (LIKE annotation_response INCLUDING ALL)")
        conn.execute("CREATE TABLE floor_answer (LIKE annotation_answer INCLUDING ALL)")
        # LIKE copies indexes and checks, not foreign keys: add the real tables' ones.
        for table, source in (("floor_response", "annotation_response"),
                              ("floor_answer", "annotation_answer")):
            rows = conn.execute(
                "SELECT pg_get_constraintdef(oid) FROM pg_constraint "
                "WHERE conrelid = %s::regclass AND contype = 'f'", [source]).fetchall()
            for n, (definition,) in enumerate(rows):
                definition = definition.replace("annotation_response(", "floor_response(")
                conn.execute(f"ALTER TABLE {table} ADD CONSTRAINT {table}_fk{n} {definition}")
        started = time.perf_counter()
        with conn.transaction():
            for table, path in (("floor_response", files["annotation_response"]),
                                ("floor_answer", files["annotation_answer"])):
                with path.open("rb") as data, conn.cursor().copy(f"COPY {table} FROM STDIN") as copy:
                    while block := data.read(1 << 20):
                        copy.write(block)
        seconds = time.perf_counter() - started
        conn.execute("DROP TABLE floor_answer, floor_response")
    return seconds


def export_floor(url: str) -> float:
    """Seconds of PostgreSQL's COPY TO of the responses joined with their answers."""
    with psycopg.connect(url) as conn:
        started = time.perf_counter()
        with conn.cursor().copy(
                "COPY (SELECT p.external_id, i.external_id, r.presentation, r.position, "
                "r.active_ms, r.received_at, q.key, a.value, a.missing, a.comment "
                "FROM annotation_answer a JOIN annotation_response r ON r.id = a.response_id "
                "JOIN studies_participant p ON p.id = r.participant_id "
                "JOIN studies_item i ON i.id = r.item_id "
                "JOIN studies_question q ON q.id = a.question_id "
                "ORDER BY r.participant_id, r.position, r.id) TO STDOUT WITH CSV HEADER") as copy:
            for _ in copy:
                pass
        return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=float, default=1e6, help="answers (e.g. 1e6, 1e7)")
    parser.add_argument("--database", default="concord_scale", help="the bench's own database")
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    parser.add_argument("--timeout", type=float, default=900,
                        help="seconds after which the analysis is stopped and recorded as failed")
    parser.add_argument("--skip", nargs="*", default=[],
                        choices=["analysis", "fanout", "dashboard", "export"],
                        help="steps left out (e.g. the analysis, to time the imports alone)")
    args = parser.parse_args(argv)
    answers = int(args.answers)
    url, admin = database_urls(args.database)
    with psycopg.connect(admin, autocommit=True) as conn:
        data_dir = conn.execute("SHOW data_directory").fetchone()[0]
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                              [args.database]).fetchone()
        if exists:
            raise SystemExit(f"database {args.database!r} exists; drop it or name another "
                             "with --database")
        try:
            free = shutil.disk_usage(data_dir).free
        except OSError:  # the server's files are not readable here: the local disk then
            free = shutil.disk_usage(tempfile.gettempdir()).free
        need = answers * BYTES_PER_ANSWER
        if free < need:
            raise SystemExit(f"not enough free disk: {free / 1e9:.1f} GB free, "
                             f"{need / 1e9:.1f} GB needed for {answers} answers")
        conn.execute(f'CREATE DATABASE "{args.database}"')
    env = {**os.environ, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "config.settings",
           "CONCORD_VAR_DIR": tempfile.mkdtemp(prefix="concord-scale-var-")}
    steps: dict[str, dict] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="concord-scale-") as tmp:
            started = time.perf_counter()
            items, responses, n_items, n_annotators = generate(Path(tmp), answers)
            print(f"database {args.database}; {answers} answers: {n_items} sentence pairs x 10 "
                  f"ratings by {n_annotators} annotators; responses.csv "
                  f"{responses.stat().st_size / 1e6:.0f} MB, generated in "
                  f"{time.perf_counter() - started:.0f} s", flush=True)
            run("migrate", manage("migrate", "--verbosity", "0"), env)
            run("setup", manage("shell", "-c", SETUP), env)
            steps["items"] = run("import_items", timed("import_items", SLUG, str(items)), env)
            steps["responses"] = run("import_responses", timed(
                "import_responses", SLUG, str(responses), "--format", "long"), env)
            steps["responses"]["floor_s"] = round(floor_copy(url), 2)
            print(f"  COPY floor: {steps['responses']['floor_s']:.1f} s", flush=True)
            if "analysis" not in args.skip:
                steps["analysis"] = run("analyze", timed(
                    "analyze", SLUG, "--output", str(Path(tmp) / "results.json")), env,
                    check=False, timeout=args.timeout)
                figures = run("run timings", manage("shell", "-c", RUN_TIMINGS), env, check=False)
                if figures["ok"] and figures["last_line"].startswith("TIMINGS "):
                    steps["analysis"]["timings"] = json.loads(figures["last_line"][8:])
            if "fanout" not in args.skip:
                steps["fanout"] = run("analyze --fanout", timed(
                    "analyze", SLUG, "--fanout", "--output", str(Path(tmp) / "fanned.json")), env,
                    check=False, timeout=args.timeout)
                figures = run("run timings", manage("shell", "-c", RUN_TIMINGS), env, check=False)
                if figures["ok"] and figures["last_line"].startswith("TIMINGS "):
                    steps["fanout"]["timings"] = json.loads(figures["last_line"][8:])
            if "dashboard" not in args.skip:
                dashboard = run("dashboard", manage("shell", "-c", DASHBOARD), env, check=False)
                if dashboard["ok"] and dashboard["last_line"].startswith("DASHBOARD"):
                    _, status, seconds = dashboard["last_line"].split()
                    dashboard["render_s"] = round(float(seconds), 3)
                    dashboard["status"] = int(status)
                steps["dashboard"] = dashboard
            if "export" not in args.skip:
                steps["export"] = run("export", timed(
                    "export", SLUG, "--what", "responses", "--format", "csv", "--output",
                    str(Path(tmp) / "responses-export.csv")), env)
                steps["export"]["floor_s"] = round(export_floor(url), 2)
    finally:
        if not args.keep:
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{args.database}" WITH (FORCE)')
        shutil.rmtree(env["CONCORD_VAR_DIR"], ignore_errors=True)
    report(steps, answers)
    return 0


def report(steps: dict[str, dict], answers: int) -> None:
    print(f"\n{'step':<18} {'seconds':>8} {'peak MB':>8}  outcome")
    for name, s in steps.items():
        print(f"{name:<18} {s['seconds']:>8.1f} {s['peak_mb']:>8}  "
              + ("ok" if s["ok"] else f"FAILED: {s.get('error', '')}"))
    r = steps["responses"]
    ratio = r["seconds"] / r["floor_s"]
    print(f"\nimport_responses {r['seconds']:.1f} s; COPY floor (same rows, same indexes and "
          f"foreign keys) {r['floor_s']:.1f} s; ratio {ratio:.2f} (target <= "
          f"{TARGETS['import_ratio']:.0f}): {'met' if ratio <= TARGETS['import_ratio'] else 'NOT met'}")
    print(f"import throughput {answers / r['seconds']:,.0f} answers/s; peak memory "
          f"{r['peak_mb']} MB")
    if answers >= 10_000_000:
        print(f"1e7 target: <= {TARGETS['import_1e7_s']:.0f} s: "
              f"{'met' if r['seconds'] <= TARGETS['import_1e7_s'] else 'NOT met'}")
    a = steps.get("analysis")
    if a is None:
        print("analyze: skipped")
    else:
        size = "1e7" if answers >= 10_000_000 else "1e6"
        limit_s, limit_gb = TARGETS[f"analysis_{size}_s"], TARGETS[f"analysis_{size}_gb"]
        met = a["ok"] and a["seconds"] <= limit_s and a["peak_mb"] <= limit_gb * 1000
        print(f"analyze: {'ok' if a['ok'] else 'FAILED'} in {a['seconds']:.1f} s, peak "
              f"{a['peak_mb']} MB (target at {size}: <= {limit_s:.0f} s, <= {limit_gb:.0f} GB: "
              f"{'met' if met else 'NOT met'}; x{a['seconds'] / limit_s:.2f} of the time, "
              f"x{a['peak_mb'] / (limit_gb * 1000):.2f} of the memory)")
        t = a.get("timings") or {}
        if t:
            sections = t.get("sections") or []
            print(f"  the run: load {t.get('load_s')} s, analyses {t.get('analyses_s')} s, "
                  f"storing the item records {t.get('store_s')} s, peak {t.get('peak_rss_mb')} MB; "
                  "largest sections: " + ", ".join(f"{k} {v:.1f} s" for k, v in sections[:6]))
    f = steps.get("fanout")
    if f is not None:
        fig = (f.get("timings") or {}).get("fanout") or {}
        if not f["ok"] or not fig:
            print(f"analyze --fanout: FAILED ({f.get('error', 'no figures')})")
        else:
            limit = TARGETS["critical_path_s"]
            print(f"analyze --fanout: {fig['tasks']} tasks in {f['seconds']:.1f} s here; total work "
                  f"{fig['work_s']:.1f} s, critical path {fig['critical_path_s']:.1f} s "
                  f"({' -> '.join(fig['critical_path'])}): x{fig['critical_path_s'] / limit:.2f} "
                  f"of the {limit:.0f} s target"
                  + (f" ({'met' if fig['critical_path_s'] <= limit else 'NOT met'} at 1e7)"
                     if answers >= 10_000_000 else "")
                  + f"; parallelism {fig['work_s'] / fig['critical_path_s']:.1f}x; longest tasks: "
                  + ", ".join(f"{n} {s:.1f} s" for n, s in fig["longest"]))
    d = steps.get("dashboard", {})
    print(f"dashboard render: {d.get('render_s', 'n/a')} s (HTTP {d.get('status', 'n/a')}; "
          "without results when the analysis failed)")
    e = steps.get("export")
    if e:
        print(f"responses CSV export {e['seconds']:.1f} s vs COPY TO {e['floor_s']:.1f} s: "
              f"{e['seconds'] / e['floor_s']:.1f}x")
    print(json.dumps({"answers": answers, "steps": steps, "import_ratio": round(ratio, 2)}))


if __name__ == "__main__":
    sys.exit(main())
