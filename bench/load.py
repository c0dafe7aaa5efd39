"""Load-test answer submission and the next-item page on gunicorn + PostgreSQL (docs/benchmarks.md).

Run from the repository root::

    python -m bench.load [--seconds N] [--concurrency 50] [--pages-concurrency 10] [--revisions 0.05]
                         [--database-url postgres://postgres@127.0.0.1:5432/concord_bench]
                         [--workers W] [--threads T] [--warmup S] [--keep-database]
                         [--baseline OLD_RUN_OUTPUT] [--kind scale|pairwise] [--no-floor]

What it does, start to finish (nothing is left running, and it refuses to run without PostgreSQL
rather than fall back to SQLite). ``--kind pairwise`` runs the same bench on a pairwise study
(issue 25): each item is a comparison of two systems' outputs for one source, and every answer is
a judgment (``{"choice": {"shown", "pick", "strength"}}``, the outputs in the order the page shows
them) instead of a scale value, so its answers/s compare with a scale study's:

1. drops and creates its own throwaway database (the name must contain ``bench``), migrates it,
   collects the static files into ``var/bench`` and, through the services, creates a study on the
   0–7 scale with enough items for every annotator to keep answering for the whole phase (with
   duplicated presentations), opens it and invites ``--concurrency`` participants;
2. starts gunicorn (gthread, as in production, ``DEBUG`` off) on a free loopback port;
3. walks every annotator through the real pages (consent GET + POST with the CSRF token,
   instructions, first item page), keeping cookies as a browser does;
4. phase 1, ``--concurrency`` annotators post answers the way ``static/js/questionnaire.js`` does
   (JSON, ``X-CSRFToken`` from the form, the page's cookies, a client-generated id), back to back
   (no think time): 10 % of answers are re-sent with the same client id after their
   acknowledgement (the acknowledgement was lost), 5 % are sent twice at once on two connections
   (double submit racing itself) and 5 % are changed with a new client id and a new value (a
   revision: going back, a second tab), itself re-sent or raced like any answer;
5. checks in PostgreSQL that the stored responses are exactly the acknowledged answer ids — none
   lost, none unacknowledged, none twice — one answer each with the value sent under that id, the
   revisions of each presentation numbered 1, 2, … with the last one current, the participants'
   counters equal to their answered presentations — and that ``synchronous_commit`` and
   ``fsync`` are on for the app's connections;
   Around phase 1, the same annotators post the same kind of answers to THE FLOOR (issue 26):
   a bare WSGI app (`floor_app`, no framework) on the same gunicorn command and database that
   stores each answer durably with one statement of the answer path's shape (a response row
   and its answer rows, ``synchronous_commit`` on) and checks nothing else; phases floor,
   Concord, floor, and Concord's server CPU per answer (gunicorn + PostgreSQL), answers/s and
   p99 are printed as ratios of the floor's (target: CPU at most ``FLOOR_CPU_RATIO`` times);
6. phase 2, ``--pages-concurrency`` of those annotators (part-way through their assignment) load
   their next-item page back to back;
7. stops gunicorn and drops the database, prints the figures against the targets and the peers'
   figures, and LAST one line of JSON. Exit status 0 when every target and check is met, 1 when
   a target or a check is missed, 2 when the run could not be set up.

The load generator is this process: an asyncio client speaking HTTP/1.1 over raw keep-alive
sockets (`bench.http_client`, no HTTP library), so it costs a small share of one core. It shares
the machine's cores with gunicorn and PostgreSQL; the CPU each of them used during the measured
window is printed, read from /proc (`bench.cpu`), so the figures can be judged for what they
are: a single 2-core box running client, app server and database together. Every request goes to
127.0.0.1 and each phase stops by itself after ``--warmup + --seconds`` seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from bench.cpu import CpuSample, children, cpu_sample, cpu_share, machine_busy
from bench.http_client import CSRF_RE, POSITION_RE, Connection, HttpError

ROOT = Path(__file__).resolve().parent.parent
VAR_DIR = ROOT / "var" / "bench"
HOST = "127.0.0.1"
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/concord_bench"
# Databases other engineers and the test suite use: never dropped, whatever --database-url says.
FORBIDDEN_DATABASES = {"concord", "test_concord", "concord_h1", "concord_h2", "concord_h3",
                       "postgres", "template0", "template1", "test", "root"}
MAX_SECONDS = 25  # per phase, so both phases with their warm-ups stay under a minute of load

# Issue 15, point 6: >= 1 000 accepted answers/s at 50 annotators with p99 < 150 ms, on 2 cores.
TARGETS = {"answers_per_s": 1000.0, "answer_p99_ms": 150.0, "pages_per_s": 150.0}
# Issue 26, point 1: an answer's server CPU (gunicorn + PostgreSQL) at most twice the floor's.
FLOOR_CPU_RATIO = 2.0
PEERS = [  # as docs/benchmarks.md quotes them, measured on the same kind of machine
    ("Potato", "answers/s (1 core)", "260-300", 280.0),
    ("Potato", "pages/s", "53", 53.0),
    ("Label Studio", "answers/s", "25", 25.0),
]

P_RESEND = 0.10    # re-sent with the same client id after the acknowledgement (ack lost)
P_INFLIGHT = 0.05  # sent twice at once on two connections (duplicate POSTs in flight)
P_REVISE = 0.05    # changed with a new client id and value: a revision (going back, a second tab)
REQUEST_TIMEOUT = 15.0
# A browser does not keep one connection for ever (gunicorn closes it after 2 s idle, and real
# annotators pause between items), so a client drops its connection after 25 requests on
# average and opens a new one. Besides, gthread workers accept connections unevenly: connections
# kept for a whole phase would freeze one lucky placement (seen: one worker with 3 annotators,
# the other with 47), and reconnecting lets the kernel spread them again, as in production.
REQUESTS_PER_CONNECTION = 25
SCALE_VALUES = list(range(8))  # likert-0-7-coref
PAIRWISE_VALUES = [0, 1]  # --kind pairwise: the canonical index of the output picked
DUPLICATES = 10


class SetupError(Exception):
    """The run could not be set up (no PostgreSQL, a database it must not drop, no server)."""


@dataclass
class Annotator:
    """A browser: one participant's link, its cookies and the page's CSRF token."""

    index: int
    token: str
    assigned: int
    base: str
    cookies: dict[str, str] = field(default_factory=dict)
    csrf: str = ""
    position: int = 0
    ran_out: bool = False
    answer_head: bytes | None = None
    question: str = ""  # the key of the study's one question
    # --kind pairwise: position -> (the comparison's outputs in canonical order, in shown order)
    comparisons: dict[int, tuple[list[str], list[str]]] = field(default_factory=dict)
    p_revise: float = P_REVISE
    rng: random.Random = field(default_factory=random.Random)

    def cookie_header(self) -> bytes:
        if not self.cookies:
            return b""
        return ("Cookie: " + "; ".join(f"{k}={v}" for k, v in self.cookies.items()) + "\r\n").encode()

    def keep_cookies(self, headers: list[tuple[bytes, bytes]]) -> None:
        for name, value in headers:
            if name == b"set-cookie":
                pair = value.decode().split(";", 1)[0]
                key, _, val = pair.partition("=")
                self.cookies[key.strip()] = val.strip()

    def head(self, method: str, path: str, *, extra: str = "", length: int | None = None) -> bytes:
        text = (f"{method} {path} HTTP/1.1\r\nHost: {self.base}\r\n"
                "User-Agent: concord-bench-load/1\r\nAccept-Language: en\r\n" + extra)
        if length is not None:
            text += f"Content-Length: {length}\r\n"
        return text.encode() + self.cookie_header() + b"\r\n"


async def open_session(ann: Annotator, conn: Connection) -> None:
    """Consent and reach the first item page as a browser does, keeping its cookies."""
    base = f"/a/{ann.token}"
    status, headers, body = await conn.request(ann.head("GET", f"{base}/"))
    ann.keep_cookies(headers)
    match = CSRF_RE.search(body)
    if status != 200 or not match:
        raise HttpError(f"consent page: HTTP {status}")
    form = b"csrfmiddlewaretoken=" + match.group(1)
    status, headers, _ = await conn.request(
        ann.head("POST", f"{base}/", length=len(form), extra=(
            "Content-Type: application/x-www-form-urlencoded\r\n"
            f"Origin: http://{ann.base}\r\nReferer: http://{ann.base}{base}/\r\n")), form)
    ann.keep_cookies(headers)
    if status != 302:
        raise HttpError(f"consent POST: HTTP {status}")
    for path in (f"{base}/instructions/", f"{base}/next/"):
        status, headers, body = await conn.request(ann.head("GET", path))
        ann.keep_cookies(headers)
        if status != 200:
            raise HttpError(f"{path}: HTTP {status}")
    csrf, position = CSRF_RE.search(body), POSITION_RE.search(body)
    if not csrf or not position:
        raise HttpError("the item page has no answer form")
    ann.csrf, ann.position = csrf.group(1).decode(), int(position.group(1))


# --- Phase 1: answers ------------------------------------------------------------------------


@dataclass
class AnswerLog:
    """Every POST's end time and latency, and what the server acknowledged per presentation."""

    ends: list[float] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    # (annotator index, position) -> {"client_ids": acknowledged ids, "created": [ids whose
    # reply said created], "first_ack": time of the first acknowledgement}
    # and "values": {client id: the value sent under it}
    acked: dict[tuple[int, int], dict] = field(default_factory=dict)
    sends: dict[str, int] = field(default_factory=lambda: {
        "first": 0, "resent": 0, "in_flight_pairs": 0, "revised": 0, "after_error": 0})


def answer_payload(ann: Annotator, position: int, client_id: str, value: int) -> bytes:
    """The body questionnaire.js sends: every question's answer (the radio's value as a string),
    timing and events."""
    active = ann.rng.randint(800, 9000)
    if ann.comparisons:
        # A pairwise judgment: the output whose canonical index is `value` (what is stored as
        # the answer's value), named by its external id, with the order shown.
        outputs, shown = ann.comparisons[position]
        answer = {"choice": {"shown": shown, "pick": outputs[value], "strength": ""},
                  "cant_judge": False, "comment": ""}
    else:
        answer = {"value": str(value), "cant_judge": False, "comment": ""}
    return json.dumps({
        "position": position,
        "client_id": client_id,
        "answers": {ann.question: answer},
        "active_ms": active,
        "events": [["shown", 0], [f"select:{value}", active - 150], ["answer", active]],
    }, separators=(",", ":")).encode()


async def post_answer(ann: Annotator, conn: Connection, position: int, client_id: str,
                      body: bytes, log: AnswerLog, value: int) -> bool:
    """POST one answer; record latency and acknowledgement; True when acknowledged."""
    if ann.answer_head is None:  # the same headers every time but the length
        ann.answer_head = ann.head("POST", f"/a/{ann.token}/answer/", extra=(
            "Content-Type: application/json\r\nAccept: application/json\r\n"
            f"X-CSRFToken: {ann.csrf}\r\nOrigin: http://{ann.base}\r\n"
            f"Referer: http://{ann.base}/a/{ann.token}/next/\r\n"))[:-2]
    head = ann.answer_head + b"Content-Length: %d\r\n\r\n" % len(body)
    start = time.perf_counter()
    try:
        status, _, data = await asyncio.wait_for(conn.request(head, body), REQUEST_TIMEOUT)
    except (TimeoutError, OSError, HttpError, ValueError) as exc:
        conn.close()
        log.errors.append(f"{type(exc).__name__}: {exc}"[:200])
        return False
    end = time.perf_counter()
    log.ends.append(end)
    log.latencies.append(end - start)
    try:
        reply = json.loads(data) if status == 200 else None
    except ValueError:
        reply = None
    if not reply or not reply.get("stored"):
        log.errors.append(f"HTTP {status}: {data[:160]!r}")
        return False
    entry = log.acked.setdefault((ann.index, position),
                                 {"client_ids": set(), "created": [], "first_ack": end,
                                  "values": {}})
    entry["client_ids"].add(client_id)
    entry["values"][client_id] = value
    if reply.get("created"):
        entry["created"].append(client_id)
    return True


async def send(ann: Annotator, conns: tuple[Connection, Connection], position: int,
               client_id: str, value: int, log: AnswerLog, stop_at: float) -> bool:
    """Send one answer as the page does: sometimes twice at once, retried after an error, and
    sometimes re-sent after its acknowledgement; True when acknowledged."""
    main, spare = conns
    body = answer_payload(ann, position, client_id, value)
    if ann.rng.random() < P_INFLIGHT:
        log.sends["in_flight_pairs"] += 1
        oks = await asyncio.gather(post_answer(ann, main, position, client_id, body, log, value),
                                   post_answer(ann, spare, position, client_id, body, log, value))
        ok = any(oks)
    else:
        ok = await post_answer(ann, main, position, client_id, body, log, value)
    tries = 0
    while not ok and tries < 3 and time.perf_counter() < stop_at:  # the page's outbox retries
        tries += 1
        log.sends["after_error"] += 1
        await asyncio.sleep(0.2 * tries)
        ok = await post_answer(ann, main, position, client_id, body, log, value)
    if ok and ann.rng.random() < P_RESEND:
        log.sends["resent"] += 1
        await post_answer(ann, main, position, client_id, body, log, value)
    return ok


async def annotate(ann: Annotator, conns: tuple[Connection, Connection], stop_at: float,
                   log: AnswerLog, stagger: float) -> None:
    """Answer item after item until `stop_at`, with retries and duplicates as real browsers do."""
    main = conns[0]
    position = ann.position
    await asyncio.sleep(ann.rng.uniform(0.0, stagger))  # annotators do not all start at once
    while time.perf_counter() < stop_at:
        if position >= ann.assigned:
            ann.ran_out = True
            return
        values = PAIRWISE_VALUES if ann.comparisons else SCALE_VALUES
        value = ann.rng.choice(values)
        client_id = str(uuid.UUID(int=ann.rng.getrandbits(128), version=4))
        log.sends["first"] += 1
        ok = await send(ann, conns, position, client_id, value, log, stop_at)
        if ok and ann.rng.random() < ann.p_revise:
            log.sends["revised"] += 1
            value = ann.rng.choice([v for v in values if v != value])
            client_id = str(uuid.UUID(int=ann.rng.getrandbits(128), version=4))
            await send(ann, conns, position, client_id, value, log, stop_at)
        position += 1
        if ok:
            ann.position = position
        if ann.rng.random() < 1 / REQUESTS_PER_CONNECTION:
            main.close()


# --- Phase 2: next-item pages ----------------------------------------------------------------


@dataclass
class PageLog:
    ends: list[float] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    bytes: int = 0


async def browse(ann: Annotator, conn: Connection, stop_at: float, log: PageLog,
                 stagger: float) -> None:
    """Load the annotator's next-item page again and again until `stop_at`."""
    head = ann.head("GET", f"/a/{ann.token}/next/", extra="Accept: text/html\r\n")
    await asyncio.sleep(ann.rng.uniform(0.0, stagger))
    while time.perf_counter() < stop_at:
        start = time.perf_counter()
        try:
            status, headers, data = await asyncio.wait_for(conn.request(head), REQUEST_TIMEOUT)
        except (TimeoutError, OSError, HttpError, ValueError) as exc:
            conn.close()
            log.errors.append(f"{type(exc).__name__}: {exc}"[:200])
            continue
        end = time.perf_counter()
        log.ends.append(end)
        log.latencies.append(end - start)
        log.bytes += len(data)
        if status != 200 or b'id="answer-form"' not in data:
            where = dict(headers).get(b"location", b"").decode()
            log.errors.append(f"{ann.token[:8]}… HTTP {status} {where}: {data[:160]!r}")
        if ann.rng.random() < 1 / REQUESTS_PER_CONNECTION:
            conn.close()


# --- Running a phase -------------------------------------------------------------------------


def percentiles(latencies: list[float]) -> dict[str, float | None]:
    if not latencies:
        return {"p50_ms": None, "p95_ms": None, "p99_ms": None, "max_ms": None}
    data = sorted(latencies)

    def pick(q: float) -> float:
        return data[min(len(data) - 1, max(0, round(q * len(data)) - 1))] * 1000

    return {"p50_ms": pick(0.50), "p95_ms": pick(0.95), "p99_ms": pick(0.99), "max_ms": data[-1] * 1000}


def window(ends: list[float], latencies: list[float], start: float, stop: float) -> list[float]:
    """Latencies of the requests that completed inside the measured window."""
    return [lat for end, lat in zip(ends, latencies, strict=True) if start <= end <= stop]


async def measured(run, master_pid: int, pg, warmup: float, seconds: float):
    """Run `run(stop_at)` for warmup + seconds; sample the CPU at the window's edges."""
    begin = time.perf_counter()
    start, stop = begin + warmup, begin + warmup + seconds
    samples: list[CpuSample] = []

    async def sampler() -> None:
        await asyncio.sleep(max(0.0, start - time.perf_counter()))
        samples.append(cpu_sample(master_pid, pg))
        await asyncio.sleep(max(0.0, stop - time.perf_counter()))
        samples.append(cpu_sample(master_pid, pg))

    await asyncio.gather(sampler(), run(stop))
    return start, stop, cpu_share(samples[0], samples[1])


# --- The floor: the least an answer can cost ------------------------------------------------
#
# Issue 26, point 1: what storing an answer durably costs on this machine with nothing of the
# app around it. A bare WSGI callable (no framework), served by the same gunicorn (same worker
# class, workers, threads) on the same database, reads the same JSON body the page posts and
# stores it with ONE statement of the answer path's shape: a response row (unique client id,
# ON CONFLICT DO NOTHING, so a retry stores nothing) and its answer rows from a jsonb record set,
# committed with synchronous_commit on (autocommit: one fsynced commit per answer). It checks
# nothing else (no link, no session, no CSRF, no revision rule): it is the floor, not an app.
# Concord's phase and the floor's are alternated in one run (floor, Concord, floor), and
# Concord's CPU per answer, answers/s and p99 are printed as ratios of the floor's.

FLOOR_TABLES_SQL = """
CREATE TABLE IF NOT EXISTS bench_floor_response (
    id bigserial PRIMARY KEY, token varchar(64) NOT NULL, position integer NOT NULL,
    client_id uuid NOT NULL UNIQUE, active_ms integer, events jsonb NOT NULL,
    received_at timestamptz NOT NULL);
CREATE TABLE IF NOT EXISTS bench_floor_answer (
    id bigserial PRIMARY KEY,
    response_id bigint NOT NULL REFERENCES bench_floor_response (id) DEFERRABLE INITIALLY DEFERRED,
    question varchar(64) NOT NULL, value double precision, missing varchar(16) NOT NULL,
    comment text NOT NULL);
CREATE INDEX IF NOT EXISTS bench_floor_answer_response ON bench_floor_answer (response_id);
"""
FLOOR_SQL = """
WITH inserted AS (
    INSERT INTO bench_floor_response (token, position, client_id, active_ms, events, received_at)
    VALUES (%s, %s, %s::uuid, %s, %s::jsonb, now())
    ON CONFLICT DO NOTHING
    RETURNING id
), answered AS (
    INSERT INTO bench_floor_answer (response_id, question, value, missing, comment)
    SELECT inserted.id, q.question, q.value, q.missing, q.comment
    FROM inserted, jsonb_to_recordset(%s::jsonb)
         AS q(question varchar, value double precision, missing varchar, comment text)
)
SELECT id FROM inserted
"""
_floor_local = __import__("threading").local()


def floor_app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    """The floor's WSGI application: POST a JSON answer to any path, get ``{"stored": true,
    "created": …}`` once it is committed (400 for a body it cannot read)."""
    import psycopg

    try:
        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        data = json.loads(body)
        token = environ["PATH_INFO"].split("/")[2]
        records = []
        for key, answer in data["answers"].items():
            choice = answer.get("choice")
            value = (choice["shown"].index(choice["pick"]) if choice else
                     float(answer["value"]))
            records.append({"question": key, "value": value, "missing": "",
                            "comment": str(answer.get("comment", ""))})
        params = (token, int(data["position"]), str(uuid.UUID(data["client_id"])),
                  data.get("active_ms"), json.dumps(data.get("events") or []),
                  json.dumps(records))
    except (KeyError, ValueError, TypeError, IndexError, AttributeError):
        start_response("400 Bad Request", [("Content-Type", "application/json")])
        return [b'{"stored":false}']
    conn = getattr(_floor_local, "conn", None)
    if conn is None or conn.closed:
        conn = _floor_local.conn = psycopg.connect(os.environ["FLOOR_DATABASE_URL"],
                                                   autocommit=True)
    row = conn.execute(FLOOR_SQL, params).fetchone()
    reply = b'{"stored":true,"created":%s}' % (b"true" if row else b"false")
    start_response("200 OK", [("Content-Type", "application/json"),
                              ("Content-Length", str(len(reply)))])
    return [reply]


async def floor_phase(args: argparse.Namespace, port: int, master_pid: int, pg: Any,
                      people: list[tuple[str, int, int]], shown: Any, seed: int
                      ) -> dict[str, Any]:
    """One measured phase of the same annotators posting the same kind of answers to the floor
    (new client ids; no re-sends' checks: the floor checks nothing)."""
    base = f"{HOST}:{port}"
    rng = random.Random(seed)
    annotators = [Annotator(index=n, token=token, assigned=10**9, base=base,
                            rng=random.Random(rng.getrandbits(64)), question="q",
                            p_revise=args.revisions, csrf="-",
                            comparisons=_endless(shown[n]) if shown else {})
                  for n, (token, _, _) in enumerate(people)]
    conns = [(Connection(HOST, port), Connection(HOST, port)) for _ in annotators]
    log = AnswerLog()

    async def answers(stop_at: float) -> None:
        await asyncio.gather(*(annotate(a, c, stop_at, log, args.warmup / 2)
                               for a, c in zip(annotators, conns, strict=True)))

    start, stop, cpu = await measured(answers, master_pid, pg, args.warmup, args.seconds)
    for pair in conns:
        for conn in pair:
            conn.close()
    return _answer_figures(log, start, stop, cpu)


class _endless(dict[int, Any]):
    """--kind pairwise on the floor: every position shows the first comparison's outputs."""

    def __init__(self, comparisons: dict[int, Any]) -> None:
        super().__init__(comparisons)
        self.first = next(iter(comparisons.values()))

    def __missing__(self, key: int) -> Any:
        return self.first


def _answer_figures(log: AnswerLog, start: float, stop: float, cpu: dict[str, float]
                    ) -> dict[str, Any]:
    """Answers/s (distinct answers first acknowledged in the window), latencies and server CPU
    per answer (gunicorn + PostgreSQL, ms of CPU)."""
    seconds = stop - start
    lat = window(log.ends, log.latencies, start, stop)
    answers_per_s = sum(start <= e["first_ack"] <= stop for e in log.acked.values()) / seconds
    server = cpu["gunicorn"] + cpu["postgres"]
    per = 1000.0 / answers_per_s if answers_per_s else 0.0
    return {"answers_per_s": answers_per_s, "p99_ms": percentiles(lat)["p99_ms"],
            "cpu_ms": server * per, "gunicorn_ms": cpu["gunicorn"] * per,
            "postgres_ms": cpu["postgres"] * per, "errors": len(log.errors), "cpu": cpu}


def _floor_line(name: str, f: dict[str, Any]) -> str:
    return (f"  {name:8s} answers/s {f['answers_per_s']:7.1f}   p99 {fmt(f['p99_ms'])} ms   "
            f"server CPU {f['cpu_ms']:.2f} ms/answer (gunicorn {f['gunicorn_ms']:.2f} + "
            f"PostgreSQL {f['postgres_ms']:.2f})   errors {f['errors']}")


def floor_ratios(concord: dict[str, Any], floors: list[dict[str, Any]]) -> dict[str, Any]:
    """Concord's figures as ratios of the floor's (the mean of the floor phases around it)."""
    def mean(key: str) -> float:
        values = [f[key] for f in floors if f[key] is not None]
        return sum(values) / len(values) if values else 0.0

    def ratio(ours: float | None, theirs: float) -> float | None:
        return round(ours / theirs, 2) if ours and theirs else None

    return {"cpu_per_answer": ratio(concord["cpu_ms"], mean("cpu_ms")),
            "answers_per_s": ratio(concord["answers_per_s"], mean("answers_per_s")),
            "p99": ratio(concord["p99_ms"], mean("p99_ms")),
            "floor_cpu_ms": round(mean("cpu_ms"), 3),
            "floor_answers_per_s": round(mean("answers_per_s"), 1),
            "floor_p99_ms": round(mean("p99_ms"), 1)}


# --- Set-up and tear-down --------------------------------------------------------------------


def database_name(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in {"postgres", "postgresql", "pgsql"}:
        raise SetupError(f"PostgreSQL is required; --database-url {url!r} is not a postgres:// URL "
                         "(the targets are for PostgreSQL, and concurrency is never measured on SQLite)")
    name = parts.path.lstrip("/")
    if not re.fullmatch(r"[a-z0-9_]*bench[a-z0-9_]*", name) or name in FORBIDDEN_DATABASES:
        raise SetupError(f"refusing to drop and re-create database {name!r}: its name must contain "
                         "'bench' (e.g. concord_bench)")
    return name


def recreate_database(url: str, name: str, *, drop_only: bool = False) -> None:
    import psycopg
    from psycopg import sql

    parts = urlsplit(url)
    admin = urlunsplit((parts.scheme.replace("pgsql", "postgresql"), parts.netloc, "/postgres", "", ""))
    try:
        conn = psycopg.connect(admin, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        raise SetupError(f"no PostgreSQL answers at {parts.netloc}: {exc}".strip()) from None
    with conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        if not drop_only:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def make_items(n: int, seed: int) -> bytes:
    """Items of realistic length: a ~60-word passage each."""
    rng = random.Random(seed)
    words = ("the committee said that it would review her proposal before the meeting while "
             "his colleagues and their partners expected a decision about the new building "
             "which the city had approved last year after a long debate").split()
    lines = ["id,text"]
    for n_item in range(n):
        text = " ".join(rng.choice(words) for _ in range(60)).capitalize() + "."
        lines.append(f"bench-{n_item},{text}")
    return ("\n".join(lines) + "\n").encode()


def make_outputs(n: int, seed: int) -> bytes:
    """--kind pairwise: two systems' outputs (~60 words each) for each of ``n`` sources."""
    rows = make_items(2 * n, seed).decode().splitlines()[1:]
    lines = ["id,text,system,source"]
    for n_row, row in enumerate(rows):
        text = row.split(",", 1)[1]
        lines.append(f"out-{n_row},{text},sys-{'ab'[n_row % 2]},src-{n_row // 2}")
    return ("\n".join(lines) + "\n").encode()


def setup_study(*, n_items: int, n_participants: int, kind: str = "scale"
                ) -> tuple[int, str, list[tuple[str, int, int]], list[dict]]:
    """Create, open and staff the bench study through the services; return participants (and,
    for a pairwise study, each one's comparisons by position: canonical and shown order)."""
    from django.contrib.auth import get_user_model

    from studies.services import items_import, participants_invite, study_create, study_open

    owner = get_user_model().objects.create_user("bench-owner", "bench@example.org", None)
    study = study_create(owner=owner, slug="bench-load", title="Load bench",
                         preset="likert-0-7-coref",
                         design={"duplicates": DUPLICATES, "duplicate_min_gap": 5, "seed": 7})
    if kind == "pairwise":
        _pairwise_study(study, n_items)
    else:
        items_import(study=study, data=make_items(n_items, seed=7), filename="bench-items.csv")
    study_open(study=study)
    participants = participants_invite(study=study, count=n_participants, label="bench")
    question = study.questions.order_by("position").first()
    assert question is not None
    return (study.pk, question.key, [(p.token, p.pk, p.n_assigned) for p in participants],
            [_shown_orders(p) for p in participants] if kind == "pairwise" else [])


def _pairwise_study(study, n_comparisons: int) -> None:
    """--kind pairwise: the outputs (never assigned on their own), one comparison per source,
    and one pairwise question instead of the scale (built with the ORM, as a draft)."""
    from studies.models import Item, Question
    from studies.services import items_import

    items_import(study=study, data=make_outputs(n_comparisons, seed=7), filename="outputs.csv")
    study.items.update(role=Item.Role.OUTPUT)
    start = study.items.count()
    Item.objects.bulk_create(
        Item(study=study, external_id=f"cmp-src-{n}-1", position=start + n, source=f"src-{n}",
             outputs=[f"out-{2 * n}", f"out-{2 * n + 1}"], meta={"design": "pairs", "seed": 0})
        for n in range(n_comparisons))
    study.questions.all().delete()
    Question.objects.create(study=study, key="preference", kind="pairwise", position=0,
                            prompt="Which output is better?", values=[], labels={},
                            comparison={"ties": False, "strength": False})


def _shown_orders(participant) -> dict[int, tuple[list[str], list[str]]]:
    from core.comparative import shown_order

    return {position: (outputs, shown_order(outputs, f"{participant.pk}:{item}"))
            for position, item, outputs in participant.assignments.values_list(
                "position", "item_id", "item__outputs")}


def start_gunicorn(*, port: int, workers: int, threads: int, env: dict[str, str], log: Path,
                   app: str = "config.wsgi:application"):
    command = [
        sys.executable, "-m", "gunicorn", app,
        "--bind", f"{HOST}:{port}", "--worker-class", "gthread",
        "--workers", str(workers), "--threads", str(threads),
        "--log-level", "warning", "--graceful-timeout", "10",
    ]
    handle = log.open("w")
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=handle, stderr=subprocess.STDOUT,
                            start_new_session=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SetupError(f"gunicorn exited with {proc.returncode}; see {log}:\n{log.read_text()[-2000:]}")
        try:
            with socket.create_connection((HOST, port), timeout=0.5):
                pass
            # The master listens before the workers have imported Django: wait for all of them.
            if len(children(proc.pid)) >= workers:
                time.sleep(1.0)
                return proc, command
        except OSError:
            pass
        time.sleep(0.2)
    stop_process(proc)
    raise SetupError(f"gunicorn did not start in 30 s; see {log}")


def stop_process(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


# --- Checks in the database ------------------------------------------------------------------


def verify(study_id: int, annotators: list[Annotator], pks: list[int], log: AnswerLog) -> dict:
    """Compare the stored responses and answers with what the server acknowledged; read the
    durability settings.

    Under the per-question model an acknowledged answer id is one stored response (with one
    answer per question; the bench's study asks one), a new id for an answered presentation is
    its next revision, and a retry stores nothing. So: the stored answer ids are exactly the
    acknowledged ones (none lost, none unacknowledged, none twice), each holds the value sent
    under it, each presentation's revisions are 1..n with the last one current, and every
    participant's counter is its number of answered presentations.
    """
    synchronous_commit, fsync, rows, bad_counters = _stored(study_id)
    stored, ids = _by_presentation(rows, pks)
    acked = log.acked
    acked_ids = {cid for entry in acked.values() for cid in entry["client_ids"]}
    lost = [cid for cid in acked_ids if cid not in ids]
    unacked = [cid for cid in ids if cid not in acked_ids]
    twice = [cid for cid, n in ids.items() if n > 1]
    wrong_value, bad_revisions, bad_answers = _presentations_checked(stored, acked)
    created_twice = [cid for entry in acked.values() for cid in set(entry["created"])
                     if entry["created"].count(cid) > 1]
    never_created = [cid for entry in acked.values() for cid in entry["client_ids"]
                     if cid not in entry["created"]]
    revisions = sum(len(r) - 1 for r in stored.values())
    ok = (len(ids) == len(acked_ids) and len(stored) == len(acked) and not lost
          and not unacked and not twice and not created_twice and not wrong_value
          and not bad_revisions and not bad_answers and bad_counters == 0
          and synchronous_commit == "on" and fsync == "on")
    return {
        "rows": len(rows),
        "presentations": len(stored),
        "acknowledged_presentations": len(acked),
        "acknowledged": len(acked_ids),
        "revisions": revisions,
        "lost": len(lost),
        "unacknowledged_rows": len(unacked),
        "stored_twice": len(twice),
        "wrong_value": wrong_value,
        "bad_revision_numbers": bad_revisions,
        "bad_answer_rows": bad_answers,
        "created_twice": len(created_twice),
        "acknowledged_without_created": len(never_created),
        "counter_mismatches": bad_counters,
        "synchronous_commit": synchronous_commit,
        "fsync": fsync,
        "ok": ok,
    }


def _stored(study_id: int) -> tuple[str, str, list[tuple], int]:
    """The durability settings of the app's connections, the study's stored responses (one row
    each: participant, position, answer id, revision, current, answers and their lowest and
    highest value) and the number of participants whose counter is wrong."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        synchronous_commit = cursor.fetchone()[0]
        cursor.execute("SHOW fsync")
        fsync = cursor.fetchone()[0]
        cursor.execute(
            "SELECT r.participant_id, a.position, r.client_id::text, r.revision, r.is_current, "
            "count(ans.id), min(ans.value), max(ans.value) "
            "FROM annotation_response r JOIN studies_assignment a ON a.id = r.assignment_id "
            "JOIN studies_participant p ON p.id = r.participant_id "
            "LEFT JOIN annotation_answer ans ON ans.response_id = r.id "
            "WHERE p.study_id = %s GROUP BY r.id, a.position", [study_id])
        rows = cursor.fetchall()
        cursor.execute(
            "SELECT count(*) FROM studies_participant p WHERE p.study_id = %s AND p.n_answered <> "
            "(SELECT count(*) FROM annotation_response r WHERE r.participant_id = p.id "
            "AND r.is_current)", [study_id])
        bad_counters = cursor.fetchone()[0]
    return synchronous_commit, fsync, rows, bad_counters


def _by_presentation(rows: list[tuple], pks: list[int]
                     ) -> tuple[dict[tuple[int, int], list[tuple]], dict[str, int]]:
    """The stored responses by (annotator index, position), and how often each answer id is
    stored."""
    by_pk = dict(zip(pks, range(len(pks)), strict=True))
    stored: dict[tuple[int, int], list[tuple]] = {}
    ids: dict[str, int] = {}
    for pid, position, cid, revision, current, n_answers, low, high in rows:
        stored.setdefault((by_pk[pid], position), []).append(
            (cid, revision, current, n_answers, low, high))
        ids[cid] = ids.get(cid, 0) + 1
    return stored, ids


def _presentations_checked(stored: dict[tuple[int, int], list[tuple]],
                           acked: dict[tuple[int, int], dict]) -> tuple[int, int, int]:
    """(responses with another value than sent under their id, presentations whose revisions
    are not 1..n with the last one current, responses without exactly one answer)."""
    wrong_value = bad_revisions = bad_answers = 0
    for key, responses in stored.items():
        sent = acked.get(key, {}).get("values", {})
        for cid, _, _, n_answers, low, high in responses:
            if n_answers != 1:
                bad_answers += 1
            elif cid in sent and not (low == high == sent[cid]):
                wrong_value += 1
        numbers = sorted(r[1] for r in responses)
        current = [r[1] for r in responses if r[2]]
        if numbers != list(range(1, len(responses) + 1)) or current != [len(responses)]:
            bad_revisions += 1
    return wrong_value, bad_revisions, bad_answers


def code_sets_synchronous_commit() -> list[str]:
    """Files of the app that mention synchronous_commit (durability must not be turned off)."""
    hits = []
    for folder in ("config", "annotation", "studies", "analysis"):
        for path in (ROOT / folder).rglob("*.py"):
            if "synchronous_commit" in path.read_text(errors="ignore"):
                hits.append(str(path.relative_to(ROOT)))
    return hits


# --- Main ------------------------------------------------------------------------------------


def fmt(value: float | None, spec: str = ".1f") -> str:
    return "n/a" if value is None else format(value, spec)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.load", description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0,
                        help=f"measured seconds per phase (at most {MAX_SECONDS})")
    parser.add_argument("--warmup", type=float, default=2.0, help="unmeasured seconds before each phase")
    parser.add_argument("--concurrency", type=int, default=50, help="annotators posting answers")
    parser.add_argument("--pages-concurrency", type=int, default=10, help="annotators loading pages")
    parser.add_argument("--database-url", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_DATABASE_URL))
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes")
    parser.add_argument("--threads", type=int, default=8, help="gunicorn threads per worker")
    parser.add_argument("--items", type=int, default=0,
                        help="items in the study (default: enough to answer for the whole phase)")
    parser.add_argument("--keep-database", action="store_true", help="leave the database for inspection")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--kind", choices=("scale", "pairwise"), default="scale",
                        help="the study's question: the 0-7 scale (default) or a pairwise "
                             "preference between two outputs (issue 25)")
    parser.add_argument("--revisions", type=float, default=P_REVISE, metavar="SHARE",
                        help=f"share of answers changed with a new id (default {P_REVISE})")
    parser.add_argument("--no-floor", action="store_true",
                        help="skip the floor's phases (a bare WSGI app storing the same answers "
                             "with one statement, alternated with Concord's)")
    parser.add_argument("--baseline", type=Path, metavar="FILE",
                        help="another run's output (its last line, the JSON) to print the ratios "
                             "against, e.g. the old code's run just before")
    args = parser.parse_args(argv)
    args.baseline_run = _baseline(args.baseline) if args.baseline else None
    if not 0 < args.seconds <= MAX_SECONDS or not 0 <= args.warmup <= 5:
        parser.error(f"--seconds must be in (0, {MAX_SECONDS}] and --warmup in [0, 5]: the load is bounded")
    if not 1 <= args.concurrency <= 200 or not 1 <= args.pages_concurrency <= args.concurrency:
        parser.error("--concurrency in [1, 200]; --pages-concurrency in [1, --concurrency]")
    if args.workers < 1 or args.threads < 1:
        parser.error("--workers and --threads must be positive")
    name = database_name(args.database_url)
    # Enough items that no annotator runs out: gthread serves its connections unevenly, and one
    # annotator on a lightly loaded worker has answered 50 items a second.
    n_items = args.items or max(300, int((args.seconds + args.warmup) * 80))

    VAR_DIR.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "DATABASE_URL": args.database_url,
        "DEBUG": "0",
        "CONCORD_VAR_DIR": str(VAR_DIR),
        # One pooled connection per gunicorn thread: a request never waits for a connection.
        "DATABASE_POOL_MIN": str(args.threads),
        "DATABASE_POOL_MAX": str(args.threads),
        "LOG_LEVEL": "WARNING",
        "DJANGO_SETTINGS_MODULE": os.environ.get("DJANGO_SETTINGS_MODULE", "config.settings"),
    }
    for key in ("REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND", "CELERY_TASK_ALWAYS_EAGER"):
        env.pop(key, None)
    os.environ.update(env)
    for key in ("REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND", "CELERY_TASK_ALWAYS_EAGER"):
        os.environ.pop(key, None)

    print("bench.load: answer submission and next-item pages, gunicorn + PostgreSQL on loopback")
    load1, load5, _ = os.getloadavg()
    idle_a = machine_busy()
    time.sleep(1.0)
    idle_b = machine_busy()
    background = (idle_b[0] - idle_a[0]) / (idle_b[1] - idle_a[1]) * (os.cpu_count() or 1)
    print(f"machine: {os.cpu_count()} cores, load average {load1:.2f} / {load5:.2f}; "
          f"{background:.2f} cores busy before the run (other work on this shared machine)")

    recreate_database(args.database_url, name)
    proc = floor_proc = None
    try:
        import django

        django.setup()
        from django.core.management import call_command
        from django.db import connection

        call_command("migrate", interactive=False, verbosity=0)
        call_command("collectstatic", interactive=False, verbosity=0)
        if not args.no_floor:
            with connection.cursor() as cursor:
                cursor.execute(FLOOR_TABLES_SQL)
        t0 = time.perf_counter()
        study_id, question, people, shown = setup_study(
            n_items=n_items, n_participants=args.concurrency, kind=args.kind)
        with connection.cursor() as cursor:
            cursor.execute("SHOW server_version")
            pg_version = cursor.fetchone()[0]
        what = "pairwise comparisons" if args.kind == "pairwise" else "items"
        print(f"database: {name} (PostgreSQL {pg_version}); study with {n_items} {what}, "
              f"{args.concurrency} participants x {people[0][2]} presentations "
              f"({DUPLICATES} duplicated) set up in {time.perf_counter() - t0:.1f} s")
        connection.close()

        port = free_port()
        proc, command = start_gunicorn(port=port, workers=args.workers, threads=args.threads,
                                       env=env, log=VAR_DIR / "gunicorn.log")
        print(f"server: gunicorn gthread, {args.workers} workers x {args.threads} threads on "
              f"{HOST}:{port}, DEBUG off, pool of {args.threads} PostgreSQL connections per worker")
        print(f"        {' '.join(command[1:])}")
        print(f"client: asyncio HTTP/1.1 keep-alive sockets in this process, a new connection "
              f"every ~{REQUESTS_PER_CONNECTION} requests; {args.warmup:g} s warm-up + "
              f"{args.seconds:g} s measured per phase")

        floor_port = floor_pid = None
        if not args.no_floor:
            floor_port = free_port()
            floor_proc, _ = start_gunicorn(
                port=floor_port, workers=args.workers, threads=args.threads,
                env={**env, "FLOOR_DATABASE_URL": args.database_url},
                log=VAR_DIR / "gunicorn-floor.log", app="bench.load:floor_app")
            floor_pid = floor_proc.pid
            print(f"floor:  the same gunicorn command serving bench.load:floor_app on "
                  f"{HOST}:{floor_port} (one INSERT … RETURNING statement per answer, "
                  "synchronous_commit on); phases floor, Concord, floor")

        result = asyncio.run(run_phases(args, port, proc.pid, study_id, question, people,
                                        shown, floor_port=floor_port, floor_pid=floor_pid))
    finally:
        if proc is not None:
            stop_process(proc)
        if floor_proc is not None:
            stop_process(floor_proc)
        try:
            from django.db import connections

            for conn in connections.all():
                conn.close()
                if conn.alias in getattr(conn, "_connection_pools", {}):
                    conn.close_pool()
        except Exception:  # noqa: BLE001, S110 - tear-down must go on to drop the database
            pass
        if not args.keep_database:
            recreate_database(args.database_url, name, drop_only=True)
        shutil.rmtree(VAR_DIR / "static", ignore_errors=True)
    return report(args, result)


async def run_phases(args, port: int, master_pid: int, study_id: int, question: str,
                     people, shown=(), *, floor_port: int | None = None,
                     floor_pid: int | None = None) -> dict:
    base = f"{HOST}:{port}"
    rng = random.Random(args.seed)
    annotators = [Annotator(index=n, token=token, assigned=assigned, base=base,
                            rng=random.Random(rng.getrandbits(64)), question=question,
                            p_revise=args.revisions,
                            comparisons=shown[n] if shown else {})
                  for n, (token, _, assigned) in enumerate(people)]
    pks = [pk for _, pk, _ in people]
    conns = [(Connection(HOST, port), Connection(HOST, port)) for _ in annotators]
    import psycopg

    pg = psycopg.connect(args.database_url, autocommit=True)  # for the CPU accounting only
    await asyncio.gather(*(open_session(a, c[0]) for a, c in zip(annotators, conns, strict=True)))

    log = AnswerLog()

    async def answers(stop_at: float) -> None:
        await asyncio.gather(*(annotate(a, c, stop_at, log, args.warmup / 2)
                               for a, c in zip(annotators, conns, strict=True)))

    floors = []
    if floor_port is not None and floor_pid is not None:
        floors.append(await floor_phase(args, floor_port, floor_pid, pg, people, shown,
                                        args.seed + 1000))
    start, stop, cpu1 = await measured(answers, master_pid, pg, args.warmup, args.seconds)
    for pair in conns:
        for conn in pair:
            conn.close()
    if floor_port is not None and floor_pid is not None:
        floors.append(await floor_phase(args, floor_port, floor_pid, pg, people, shown,
                                        args.seed + 2000))
    lat1 = window(log.ends, log.latencies, start, stop)
    checks = await asyncio.to_thread(verify, study_id, annotators, pks, log)  # Django is sync

    pages = PageLog()
    # Annotators part-way through their assignment (a finished one is sent to the done page).
    browsers = [a for a in annotators if a.position < a.assigned][:args.pages_concurrency]
    page_conns = [Connection(HOST, port) for _ in browsers]

    async def browsing(stop_at: float) -> None:
        await asyncio.gather(*(browse(a, c, stop_at, pages, args.warmup / 2)
                               for a, c in zip(browsers, page_conns, strict=True)))

    pstart, pstop, cpu2 = await measured(browsing, master_pid, pg, args.warmup, args.seconds)
    for conn in page_conns:
        conn.close()
    lat2 = window(pages.ends, pages.latencies, pstart, pstop)
    pg.close()
    return {
        "log": log, "lat1": lat1, "cpu1": cpu1, "window1": stop - start,
        "bounds1": (start, stop), "checks": checks,
        "pages": pages, "lat2": lat2, "cpu2": cpu2, "window2": pstop - pstart,
        "ran_out": sum(a.ran_out for a in annotators),
        "browsers": len(browsers),
        "per_annotator": sorted(a.position for a in annotators),
        "concord": _answer_figures(log, start, stop, cpu1),
        "floors": floors,
    }


def report(args, result: dict) -> int:
    log: AnswerLog = result["log"]
    checks = result["checks"]
    seconds1, seconds2 = result["window1"], result["window2"]
    posts_per_s = len(result["lat1"]) / seconds1
    # Distinct answers first acknowledged inside the window: a re-send is not a new answer.
    start, stop = result["bounds1"]
    answers_per_s = sum(start <= e["first_ack"] <= stop for e in log.acked.values()) / seconds1
    p1 = percentiles(result["lat1"])
    pages_per_s = len(result["lat2"]) / seconds2
    p2 = percentiles(result["lat2"])
    cpu1, cpu2 = result["cpu1"], result["cpu2"]
    mentions = code_sets_synchronous_commit()

    print()
    print(f"phase 1: {args.concurrency} annotators posting answers for {seconds1:.1f} s")
    s = log.sends
    print(f"  sends: {s['first']} answers, {s['resent']} re-sent with the same id, "
          f"{s['in_flight_pairs']} sent twice at once, {s['revised']} changed with a new id (revisions), "
          f"{s['after_error']} retried after an error")
    print(f"  accepted answers/s: {answers_per_s:7.1f}   (target >= {TARGETS['answers_per_s']:.0f}: "
          f"x{answers_per_s / TARGETS['answers_per_s']:.2f})   [POSTs acknowledged/s incl. re-sends: "
          f"{posts_per_s:.1f}]")
    print(f"  latency ms: p50 {fmt(p1['p50_ms'])}  p95 {fmt(p1['p95_ms'])}  p99 {fmt(p1['p99_ms'])}"
          f"  max {fmt(p1['max_ms'])}   (p99 target < {TARGETS['answer_p99_ms']:.0f}: "
          f"x{(p1['p99_ms'] or 0) / TARGETS['answer_p99_ms']:.2f} of the limit)")
    print(f"  errors: {len(log.errors)}" + (f" (first: {log.errors[0]})" if log.errors else ""))
    spread = result["per_annotator"]
    print(f"  answers per annotator: min {spread[0]}, median {spread[len(spread) // 2]}, "
          f"max {spread[-1]} (gthread serves keep-alive connections unevenly under saturation)")
    if result["ran_out"]:
        print(f"  WARNING: {result['ran_out']} annotators ran out of items; raise --items")
    print(f"  rows check: {checks['rows']} responses = {checks['acknowledged']} acknowledged "
          f"answer ids ({checks['presentations']} presentations = "
          f"{checks['acknowledged_presentations']} acknowledged, {checks['revisions']} revisions); "
          f"lost {checks['lost']}, unacknowledged {checks['unacknowledged_rows']}, "
          f"twice {checks['stored_twice']}, created twice {checks['created_twice']}, wrong value "
          f"{checks['wrong_value']}, bad revision numbers {checks['bad_revision_numbers']}, "
          f"answers not one per response {checks['bad_answer_rows']}, counter mismatches "
          f"{checks['counter_mismatches']}: {'ok' if checks['ok'] else 'FAILED'}")
    print(f"  durability: synchronous_commit={checks['synchronous_commit']}, fsync={checks['fsync']} "
          f"on the app's connections; code mentioning synchronous_commit: {mentions or 'none'}")
    print(_cpu_line(cpu1))

    print()
    print(f"phase 2: {result['browsers']} annotators loading their next-item page for {seconds2:.1f} s")
    pages: PageLog = result["pages"]
    print(f"  pages/s: {pages_per_s:7.1f}   (target >= {TARGETS['pages_per_s']:.0f}: "
          f"x{pages_per_s / TARGETS['pages_per_s']:.2f}); "
          f"{pages.bytes / max(1, len(pages.latencies)) / 1024:.1f} KiB a page")
    print(f"  latency ms: p50 {fmt(p2['p50_ms'])}  p95 {fmt(p2['p95_ms'])}  p99 {fmt(p2['p99_ms'])}"
          f"  max {fmt(p2['max_ms'])}")
    print(f"  errors: {len(pages.errors)}" + (f" (first: {pages.errors[0]}; last: {pages.errors[-1]})" if pages.errors else ""))
    print(_cpu_line(cpu2))

    print()
    print("peers (docs/benchmarks.md, same kind of machine):")
    ours = {"answers/s (1 core)": answers_per_s, "answers/s": answers_per_s, "pages/s": pages_per_s}
    for peer, what, quoted, value in PEERS:
        print(f"  {peer:12s} {what:19s} {quoted:>8s}   Concord {ours[what]:7.1f} (x{ours[what] / value:.1f})")
    per_core = answers_per_s / cpu1["gunicorn"] if cpu1["gunicorn"] > 0 else 0.0
    print(f"  Potato's answers/s are for one core: Concord's {answers_per_s:.1f} used "
          f"{cpu1['gunicorn']:.2f} cores of gunicorn, i.e. {per_core:.0f} answers/s per core of app "
          f"server (plus {cpu1['postgres']:.2f} cores of PostgreSQL)")
    print("honesty: client, gunicorn and PostgreSQL share the same 2 cores; the generator's own "
          "CPU is the 'generator' share above, and 'other' is work outside this benchmark.")

    floor = None
    if result["floors"]:
        floor = floor_ratios(result["concord"], result["floors"])
        print()
        print("the floor (issue 26): the same answers stored by a bare WSGI app with one "
              "statement, phases alternated in this run")
        print(_floor_line("floor", result["floors"][0]))
        print(_floor_line("Concord", result["concord"]))
        for more in result["floors"][1:]:
            print(_floor_line("floor", more))
        print(f"  Concord / floor: server CPU per answer x{fmt(floor['cpu_per_answer'], '.2f')} "
              f"(target <= {FLOOR_CPU_RATIO:g}), answers/s x{fmt(floor['answers_per_s'], '.2f')}, "
              f"p99 x{fmt(floor['p99'], '.2f')}")

    if args.baseline_run is not None:
        print(_baseline_line(args.baseline_run, answers_per_s=answers_per_s, p99_ms=p1["p99_ms"],
                             per_core=per_core))

    met = {
        "answers_per_s": answers_per_s >= TARGETS["answers_per_s"],
        "answer_p99_ms": p1["p99_ms"] is not None and p1["p99_ms"] < TARGETS["answer_p99_ms"],
        "pages_per_s": pages_per_s >= TARGETS["pages_per_s"],
        "rows_check": bool(checks["ok"]),
        "no_errors": not log.errors and not pages.errors,
    }
    if floor is not None:
        met["cpu_vs_floor"] = (floor["cpu_per_answer"] is not None
                               and floor["cpu_per_answer"] <= FLOOR_CPU_RATIO)
    ok = all(met.values())
    print("ok" if ok else "NOT ok: " + ", ".join(k for k, v in met.items() if not v))

    def rounded(d: dict) -> dict:
        return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in d.items()}

    print(json.dumps({
        "config": {"workers": args.workers, "threads": args.threads, "concurrency": args.concurrency,
                   "revisions": args.revisions,
                   "pages_concurrency": args.pages_concurrency, "seconds": args.seconds,
                   "warmup": args.warmup, "cores": os.cpu_count(), "kind": args.kind},
        "answers_per_s": round(answers_per_s, 1),
        "posts_per_s": round(posts_per_s, 1),
        "answer_latency": rounded(p1),
        "answer_errors": len(log.errors),
        "sends": log.sends,
        "rows_check": checks,
        "pages_per_s": round(pages_per_s, 1),
        "page_latency": rounded(p2),
        "page_errors": len(pages.errors),
        "answers_per_gunicorn_core": round(per_core, 1),
        "cpu_cores_answers": rounded(cpu1),
        "cpu_cores_pages": rounded(cpu2),
        "targets": TARGETS,
        "floor": floor,
        "met": met,
        "ok": ok,
    }))
    return 0 if ok else 1


def _baseline(path: Path) -> dict:
    """The JSON line a run printed last (the whole output, or just that line, in a file)."""
    try:
        lines = [line for line in path.read_text().splitlines() if line.strip()]
        return json.loads(lines[-1])
    except (OSError, IndexError, ValueError) as exc:
        raise SetupError(f"--baseline {path}: not a run's output ({exc})") from None


def _baseline_line(base: dict, *, answers_per_s: float, p99_ms: float | None,
                   per_core: float) -> str:
    def ratio(ours: float | None, theirs: float | None) -> str:
        return f"x{ours / theirs:.2f}" if ours and theirs else "-"

    base_p99 = (base.get("answer_latency") or {}).get("p99_ms")
    return (f"against the baseline ({base.get('config', {}).get('workers')} x "
            f"{base.get('config', {}).get('threads')}): answers/s {answers_per_s:.1f} vs "
            f"{base.get('answers_per_s')} ({ratio(answers_per_s, base.get('answers_per_s'))}), "
            f"per gunicorn core {per_core:.0f} vs {base.get('answers_per_gunicorn_core')} "
            f"({ratio(per_core, base.get('answers_per_gunicorn_core'))}), p99 ms "
            f"{p99_ms or 0:.0f} vs {base_p99} ({ratio(p99_ms, base_p99)})")


def _cpu_line(cpu: dict[str, float]) -> str:
    cores = os.cpu_count() or 1
    return (f"  CPU (cores of {cores}): gunicorn {cpu['gunicorn']:.2f}, postgres (this database + WAL) "
            f"{cpu['postgres']:.2f}, "
            f"generator {cpu['generator']:.2f} ({cpu['generator'] / cores:.0%} of the machine), "
            f"other {cpu['other']:.2f}; machine busy {cpu['machine']:.2f}")


def run(argv: list[str] | None = None) -> int:
    try:
        return main(argv)
    except SetupError as exc:
        print(f"bench.load: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(run())
