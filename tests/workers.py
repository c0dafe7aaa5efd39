"""Real Celery worker processes for the tests that need one (PostgreSQL + Redis)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from tests.conftest import require

ROOT = Path(__file__).resolve().parents[1]


def require_worker_services() -> None:
    require(connection.vendor == "postgresql", "a real worker needs PostgreSQL (DATABASE_URL)")
    require(settings.CELERY_BROKER_URL.startswith("redis://"), "a real worker needs Redis (REDIS_URL)")


def start_worker(log_dir: Path, name: str, **env: str) -> subprocess.Popen:
    """Start `celery worker -P solo` on the test database; its log goes to log_dir/name.log."""
    db = connection.settings_dict
    environment = {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
        "DATABASE_POOL": "0",
        **env,
    }
    log = open(log_dir / f"{name}.log", "w")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "-P", "solo", "-n", f"{name}@%h",
         "--loglevel", "info", "--without-gossip", "--without-mingle", "--without-heartbeat"],
        cwd=ROOT, env=environment, stdout=log, stderr=subprocess.STDOUT,
    )


def start_beat(log_dir: Path, name: str = "beat", **env: str) -> subprocess.Popen:
    """Start one `celery beat` (the periodic sweep of jobs every CONCORD_SWEEP_SECONDS: pass a
    short interval in ``env``); its schedule file and log go to log_dir."""
    environment = {**os.environ, **env}
    log = open(log_dir / f"{name}.log", "w")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "beat", "--loglevel", "info",
         "--schedule", str(log_dir / f"{name}-schedule")],
        cwd=ROOT, env=environment, stdout=log, stderr=subprocess.STDOUT,
    )


def stop_worker(worker: subprocess.Popen) -> None:
    worker.terminate()
    try:
        worker.wait(timeout=20)
    except subprocess.TimeoutExpired:
        worker.kill()
        worker.wait()


def wait_while_moving(predicate, progress, *, idle: float, cap: float, what: str):
    """Wait for ``predicate`` as long as ``progress()`` keeps changing: fail after ``idle``
    seconds without a change, or after ``cap`` seconds in all.  For waits whose length follows
    the machine's load (a chord of chunks on a busy CI machine), where a fixed timeout fails a
    run that was only slow, yet a run that stopped moving still fails fast enough."""
    start = time.monotonic()
    seen, changed = progress(), start
    while (now := time.monotonic()) - start < cap:
        value = predicate()
        if value:
            return value
        current = progress()
        if current != seen:
            seen, changed = current, now
        elif now - changed > idle:
            pytest.fail(f"{what}: nothing moved for {idle:.0f} s (last {seen!r})")
        time.sleep(0.2)
    pytest.fail(f"timed out after {cap:.0f} s waiting for {what} (last {seen!r})")


def wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}")
