"""A database outage, seen through gunicorn: 503 with Retry-After at once, and recovery.

The machine's PostgreSQL is never stopped: the server under test reaches the database through a
TCP relay of our own (`Relay`), and the outage is the relay cutting every connection and refusing
new ones, as a restarting or unreachable server does.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import requests
from django.conf import settings
from django.db import connection

from tests.conftest import require

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "x" * 43  # shaped like a link's token; nobody's


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Relay:
    """Forward a loopback port to the database; `cut()` is the outage, `restore()` its end."""

    def __init__(self, upstream: tuple[str, int]):
        self.upstream = upstream
        self.port = free_port()
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._listener: socket.socket | None = None
        self.restore()

    def restore(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        listener.settimeout(0.1)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def cut(self) -> None:
        """Close the port (new connections are refused) and every open connection."""
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()

    def _accept(self, listener: socket.socket) -> None:
        while self._listener is listener:
            try:
                client, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            with self._lock:
                self._sockets += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, target: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                target.sendall(data)
        except OSError:
            pass
        for sock in (source, target):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class Server:
    """gunicorn (as in production, DEBUG off) on a free loopback port, with this DATABASE_URL."""

    def __init__(self, database_url: str, **extra_env: str):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"}
        env.update(DATABASE_URL=database_url, DEBUG="0", CONCORD_VAR_DIR=str(settings.VAR_DIR),
                   **extra_env)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "config.wsgi:application", "--bind",
             f"127.0.0.1:{self.port}", "--workers", "1", "--threads", "4", "--timeout", "60"],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # the log-in page needs no database
            assert self.process.poll() is None, self.process.communicate()[1][-3000:]
            try:
                # The first request imports the whole app: on a loaded machine it can take
                # several seconds, which is a slow start, not a failure.
                if requests.get(f"{self.url}/accounts/login/", timeout=30).status_code == 200:
                    return
            except (requests.ConnectionError, requests.Timeout):
                time.sleep(0.2)
        raise AssertionError("gunicorn did not start in 60 s")

    def stop(self) -> str:
        self.process.terminate()
        try:
            return self.process.communicate(timeout=30)[1]
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.communicate()[1]


def postgres_url(port: int) -> str:
    db = connection.settings_dict
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    return f"postgres://{auth}@127.0.0.1:{port}/{db['NAME']}"


def timed(call):
    start = time.monotonic()
    response = call()
    return response, time.monotonic() - start


@pytest.fixture
def server_without_database():
    server = Server(f"postgres://concord@127.0.0.1:{free_port()}/concord")  # nothing listens
    yield server
    server.stop()


def test_it_answers_503_with_retry_after_at_once_while_the_database_is_down(server_without_database):
    url = server_without_database.url
    session = requests.Session()
    page, seconds = timed(lambda: session.get(f"{url}/a/{TOKEN}/next/", timeout=30))
    assert page.status_code == 503 and page.headers["Retry-After"] == "5"
    assert seconds < 3, seconds  # the pool's timeout (2 s), not the old 10 s
    assert page.headers["Content-Type"].startswith("text/html")
    assert "Back in a moment" in page.text and "Traceback" not in page.text
    assert '<meta http-equiv="refresh" content="5">' in page.text
    assert "no-store" in page.headers["Cache-Control"]
    french = session.get(f"{url}/a/{TOKEN}/", headers={"Accept-Language": "fr"}, timeout=30)
    assert french.status_code == 503 and "Cette page réessaie dans 5 secondes." in french.text

    # The annotator page's script posts JSON and keeps retrying on a 5xx.
    csrf = session.get(f"{url}/accounts/login/", timeout=30).cookies["csrftoken"]
    answer, seconds = timed(lambda: session.post(
        f"{url}/a/{TOKEN}/answer/", json={"position": 0, "value": 1, "client_id": "c"},
        headers={"X-CSRFToken": csrf, "Accept": "application/json"}, timeout=30))
    assert answer.status_code == 503 and answer.headers["Retry-After"] == "5"
    assert answer.json()["retry_after"] == 5 and seconds < 3

    # A researcher's page (the session lives in the database) and the API.
    session.cookies.set("sessionid", "abc" * 10)
    assert session.get(f"{url}/studies/", timeout=30).status_code == 503
    api = session.get(f"{url}/api/studies/", timeout=30)
    assert api.status_code == 503 and api.json()["retry_after"] == 5

    log = server_without_database.stop()
    assert "Traceback" not in log and "database unavailable, answered 503" in log


@pytest.mark.slow
def test_it_recovers_within_seconds_when_the_database_is_back(transactional_db, participant):
    require(connection.vendor == "postgresql", "needs PostgreSQL (DATABASE_URL=postgres://…)")
    from studies.services import participant_consent

    participant_consent(participant=participant)
    db = connection.settings_dict
    relay = Relay((db["HOST"] or "127.0.0.1", int(db["PORT"] or 5432)))
    server = Server(postgres_url(relay.port))
    page = f"{server.url}/a/{participant.token}/next/"
    try:
        assert requests.get(page, timeout=30).status_code == 200

        relay.cut()
        down, seconds = timed(lambda: requests.get(page, timeout=30))
        assert down.status_code == 503 and down.headers["Retry-After"] == "5" and seconds < 3
        # Long enough for the pool to give up reconnecting (DATABASE_POOL_RECONNECT_TIMEOUT).
        for _ in range(4):
            assert requests.get(page, timeout=30).status_code == 503
        time.sleep(3)

        relay.restore()
        back_at = time.monotonic()
        statuses = []
        while time.monotonic() - back_at < 15:
            statuses.append(requests.get(page, timeout=30).status_code)
            if statuses[-1] == 200:
                break
            time.sleep(0.25)
        assert statuses[-1] == 200, statuses
        assert time.monotonic() - back_at < 5, statuses
        assert set(statuses) <= {200, 503}, statuses
    finally:
        log = server.stop()
        relay.cut()
    assert "Traceback" not in log, log[-3000:]
