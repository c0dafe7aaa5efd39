"""CPU per answer of the answer path, in one process on PostgreSQL (docs/benchmarks.md).

Run from the repository root::

    python -m bench.answer_cost [--answers 3000] [--participants 10] [--chunks 5]
                                [--database-url postgres://postgres@127.0.0.1:5432/concord_bench_cost]
                                [--instructions] [--baseline OLD_RUN_OUTPUT]

`bench.load` measures throughput: many annotators at once on gunicorn, where the figure moves
with everything else the shared 2-core machine does (two runs of the same code minutes apart
differed by a fifth). This measures what one answer costs, with nothing running concurrently:
the same study as `bench.load` (its `setup_study`), each participant walked through consent and
instructions to the item page by Django's test client (CSRF enforced, so the token is checked as
in production), then ``--answers`` first answers posted one after another as the page's script
posts them, through every middleware and the view, into PostgreSQL (its own throwaway database,
pool of one connection, ``DEBUG`` off). It reads the CPU this process used (client and server
side of the test client: Django's own request building is the same in any version) and the CPU
of the database's backend, per answer, in ``--chunks`` parts, and prints the median part and,
LAST, one line of JSON. ``--baseline`` prints the ratios against another run's output: copy this
file, `bench/http_client.py` and `bench/cpu.py` into a checkout of the old code (its `bench.load`
has the same `setup_study`) and run both alternately. It checks that every answer was stored once (exit status 1 if not).

CPU seconds on a shared virtual machine still move by a fifth from one run to the next, so
``--instructions`` counts instead: it runs itself under valgrind's callgrind with the counting
switched on only around the answers (``callgrind_control -i on/off``), and prints the machine
instructions this process executed per answer — the same figure, to a few parts in a thousand,
whatever else the machine does (slow: use a few hundred answers). The database's side has no
such count; its WAL bytes per answer (printed in both modes) are deterministic too.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from bench import load
from bench.cpu import postgres_cpu
from bench.http_client import CSRF_RE, POSITION_RE

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/concord_bench_cost"


def _walk(client, token: str) -> tuple[str, int]:
    """Consent and reach the first item page; return its CSRF token and position."""
    base = f"/a/{token}"
    page = client.get(f"{base}/")
    csrf = CSRF_RE.search(page.content)
    if page.status_code != 200 or not csrf:
        raise load.SetupError(f"consent page: HTTP {page.status_code}")
    posted = client.post(f"{base}/", {"csrfmiddlewaretoken": csrf.group(1).decode()})
    if posted.status_code != 302:
        raise load.SetupError(f"consent POST: HTTP {posted.status_code}")
    client.get(f"{base}/instructions/")
    page = client.get(f"{base}/next/")
    csrf, position = CSRF_RE.search(page.content), POSITION_RE.search(page.content)
    if not csrf or not position:
        raise load.SetupError("the item page has no answer form")
    return csrf.group(1).decode(), int(position.group(1))


def _payload(position: int, value: int, question: str | None) -> str:
    """What questionnaire.js sends (the form of answers the checked-out code reads)."""
    body: dict = {"position": position, "client_id": str(uuid.uuid4()), "active_ms": 2400,
                  "events": [["shown", 0], [f"select:{value}", 2250], ["answer", 2400]]}
    if question is None:  # code from before several questions per item
        body["value"] = str(value)
    else:
        body["answers"] = {question: {"value": str(value), "cant_judge": False, "comment": ""}}
    return json.dumps(body, separators=(",", ":"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.answer_cost",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=3000)
    parser.add_argument("--participants", type=int, default=10)
    parser.add_argument("--chunks", type=int, default=5, help="parts the median is taken over")
    parser.add_argument("--database-url",
                        default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_DATABASE_URL))
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions per answer under callgrind (valgrind)")
    parser.add_argument("--keep-database", action="store_true",
                        help="leave the database for inspection")
    parser.add_argument("--baseline", type=Path, metavar="FILE",
                        help="another run's output (its last line) to print the ratios against")
    args = parser.parse_args(argv)
    if not 100 <= args.answers <= 100_000 or not 1 <= args.participants <= 100 \
            or not 1 <= args.chunks <= args.answers // 20:
        parser.error("--answers in [100, 100000], --participants in [1, 100], "
                     "--chunks in [1, answers / 20]")
    if args.instructions and not os.environ.get(_CHILD):
        return _counted(args, list(sys.argv[1:] if argv is None else argv))
    name = load.database_name(args.database_url)
    load.VAR_DIR.mkdir(parents=True, exist_ok=True)
    os.environ.update({"DATABASE_URL": args.database_url, "DEBUG": "0",
                       "CONCORD_VAR_DIR": str(load.VAR_DIR), "DATABASE_POOL_MIN": "1",
                       "DATABASE_POOL_MAX": "1", "LOG_LEVEL": "WARNING",
                       "DJANGO_SETTINGS_MODULE": "config.settings"})
    for key in ("REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND"):
        os.environ.pop(key, None)
    load.recreate_database(args.database_url, name)
    try:
        return _run(args)
    finally:
        from django.db import connections

        for conn in connections.all():
            conn.close()
            if conn.alias in getattr(conn, "_connection_pools", {}):
                conn.close_pool()
        if not args.keep_database:
            load.recreate_database(args.database_url, name, drop_only=True)
        shutil.rmtree(load.VAR_DIR / "static", ignore_errors=True)


def _run(args) -> int:
    import django

    django.setup()
    import psycopg
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client

    from annotation.models import Response

    call_command("migrate", interactive=False, verbosity=0)
    call_command("collectstatic", interactive=False, verbosity=0)  # the pages name hashed files
    per_participant = -(-args.answers // args.participants)
    setup = load.setup_study(n_items=per_participant, n_participants=args.participants)
    # (study id, question key, people) since several questions per item; (study id, people) before
    question, people = (setup[1], setup[2]) if len(setup) == 3 else (None, setup[1])
    clients = []
    for token, _pk, _assigned in people:
        client = Client(enforce_csrf_checks=True, HTTP_HOST="127.0.0.1")
        csrf, position = _walk(client, token)
        clients.append([client, token, csrf, position])
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]
    before = Response.objects.count()

    _handshake("READY")
    chunk = args.answers // args.chunks
    parts = []
    sent = 0
    with psycopg.connect(args.database_url) as pg:
        for _ in range(args.chunks):
            server = postgres_cpu(pg)
            lsn = pg.execute("SELECT pg_current_wal_lsn()").fetchone()[0]
            cpu, wall = time.process_time(), time.perf_counter()
            for n in range(chunk):
                entry = clients[(sent + n) % len(clients)]
                client, token, csrf, position = entry
                reply = client.post(f"/a/{token}/answer/", _payload(position, n % 8, question),
                                    content_type="application/json", HTTP_X_CSRFTOKEN=csrf)
                if reply.status_code != 200 or not reply.json().get("stored"):
                    print(f"answer refused: HTTP {reply.status_code} {reply.content[:200]!r}")
                    return 1
                entry[3] = position + 1
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            db = sum(seconds - server[pid] for pid, seconds in postgres_cpu(pg).items()
                     if pid in server)
            wal = pg.execute("SELECT pg_current_wal_lsn() - %s::pg_lsn", [lsn]).fetchone()[0]
            parts.append({"app_us": cpu / chunk * 1e6, "db_us": db / chunk * 1e6,
                          "wall_us": wall / chunk * 1e6, "wal_bytes": float(wal) / chunk})
            sent += chunk
    _handshake("DONE")
    stored = Response.objects.count() - before
    result = {key: round(statistics.median(p[key] for p in parts), 1)
              for key in ("app_us", "db_us", "wall_us", "wal_bytes")}
    if os.environ.get(_CHILD):
        return _report_child(result, sent, stored)
    result.update(answers=sent, stored=stored, backend_pid=backend,
                  parts=[{k: round(v, 1) for k, v in p.items()} for p in parts])
    print(f"bench.answer_cost: {sent} first answers, one after another, through the test client "
          f"and every middleware into PostgreSQL")
    print(f"  per answer (median of {args.chunks} parts): this process {result['app_us']:.0f} us "
          f"of CPU, PostgreSQL {result['db_us']:.0f} us, {result['wall_us']:.0f} us of wall time, "
          f"{result['wal_bytes']:.0f} bytes of WAL")
    if args.baseline:
        base = json.loads(args.baseline.read_text().strip().splitlines()[-1])
        print("  against the baseline: " + ", ".join(
            f"{key} {result[key]:.0f} vs {base[key]:.0f} (x{result[key] / base[key]:.2f})"
            for key in ("app_us", "db_us", "wall_us", "wal_bytes") if base.get(key)))
    ok = stored == sent
    print("ok" if ok else f"NOT ok: {stored} rows stored for {sent} answers")
    print(json.dumps(result))
    return 0 if ok else 1


# --instructions: this script again, under callgrind, counting only between READY and DONE.
_CHILD = "CONCORD_ANSWER_COST_COUNTED"


def _handshake(word: str) -> None:
    """Under --instructions, tell the parent where the answers start or end and wait for it."""
    if os.environ.get(_CHILD):
        print(word, flush=True)
        sys.stdin.readline()


def _report_child(result: dict, sent: int, stored: int) -> int:
    print(json.dumps({"answers": sent, "stored": stored, "wal_bytes": result["wal_bytes"]}))
    return 0 if stored == sent else 1


def _counted(args, argv: list[str]) -> int:
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("--instructions needs valgrind (callgrind_control)")
        return 2
    argv = [a for a in argv if a != "--instructions"
            and not a.startswith(("--baseline=", "--chunks="))]
    for flag in ("--baseline", "--chunks"):  # one part; the ratio is printed here
        if flag in argv:
            at = argv.index(flag)
            del argv[at:at + 2]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        child = subprocess.Popen(  # noqa: S603 - our own interpreter and script
            ["valgrind", "--tool=callgrind", "--instr-atstart=no",
             f"--callgrind-out-file={out}", sys.executable, "-m", "bench.answer_cost",
             *argv, "--chunks", "1"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            env={**os.environ, _CHILD: "1"})
        assert child.stdin is not None and child.stdout is not None
        last = ""
        for line in child.stdout:
            word = line.strip()
            if word in ("READY", "DONE"):
                subprocess.run(["callgrind_control", "-i", "on" if word == "READY" else "off",  # noqa: S607
                                str(child.pid)], check=True, capture_output=True)
                child.stdin.write("\n")
                child.stdin.flush()
            elif word:
                last = word
        if child.wait() != 0:
            print(f"the counted run failed (exit status {child.returncode}): {last}")
            return 1
        totals = [line for line in out.read_text().splitlines() if line.startswith("totals:")]
        counted = json.loads(last)
    per_answer = int(totals[-1].split()[1]) / counted["answers"]
    result = {"instructions": round(per_answer), "answers": counted["answers"],
              "stored": counted["stored"], "wal_bytes": counted["wal_bytes"]}
    print(f"bench.answer_cost --instructions: {counted['answers']} first answers under callgrind")
    print(f"  per answer: {per_answer / 1e6:.3f} million instructions in this process, "
          f"{counted['wal_bytes']:.0f} bytes of WAL")
    if args.baseline:
        base = json.loads(args.baseline.read_text().strip().splitlines()[-1])
        print("  against the baseline: " + ", ".join(
            f"{key} {result[key]:.0f} vs {base[key]:.0f} (x{result[key] / base[key]:.3f})"
            for key in ("instructions", "wal_bytes") if base.get(key)))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
