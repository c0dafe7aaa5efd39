"""Shared fixtures: researcher personas, studies, and service checks that never skip in CI."""

from __future__ import annotations

import fcntl
import os
import runpy
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import settings as hypothesis_settings

# CI runs every property test on the same examples (a failure there is reproducible, never a
# coin toss); developers' runs keep exploring new ones.
hypothesis_settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
    hypothesis_settings.load_profile("ci")


def require(condition: bool, reason: str) -> None:
    """Skip when a service is truly absent on a developer's machine; fail in CI (CI=true)."""
    if condition:
        return
    if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
        pytest.fail(f"CI must provide this: {reason}")
    pytest.skip(reason)


def settings_from_env(**variables: str | None) -> dict[str, Any]:
    """Return the settings config/settings.py builds with these environment variables set
    (None: unset) on top of the process's own, without touching the running settings."""
    with mock.patch.dict(os.environ):
        for name, value in variables.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        return runpy.run_path(str(Path(__file__).resolve().parent.parent / "config" / "settings.py"))


@pytest.fixture(scope="session", autouse=True)
def _collected_static(request):
    """Collect static files once, so pages render with the manifest storage used in production."""
    if not request.config.pluginmanager.hasplugin("django"):
        return
    from django.conf import settings
    from django.core.management import call_command

    # collectstatic copies only what changed; a stale manifest would hide edits. Parallel
    # workers (pytest -n) share STATIC_ROOT: one collects at a time, the others then find it done.
    Path(settings.STATIC_ROOT).mkdir(parents=True, exist_ok=True)
    with open(Path(settings.STATIC_ROOT).parent / ".collectstatic.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        call_command("collectstatic", interactive=False, verbosity=0)
    # The live server must serve the collected, hashed files as WhiteNoise does in production;
    # the handler pytest-django picks by default only knows the unhashed names of the finders.
    from django.contrib.staticfiles import handlers
    from django.test.testcases import _StaticFilesHandler

    handlers.StaticFilesHandler = _StaticFilesHandler


@pytest.fixture(autouse=True)
def _own_cache(request):
    """Give each test a cache of its own (a fresh key prefix): the rate limits' counts
    (studies.ratelimit) never carry over between tests, parallel workers or runs that share one
    Redis, and nothing is flushed (the Celery broker lives in that Redis too)."""
    if not request.config.pluginmanager.hasplugin("django"):
        yield
        return
    import uuid

    from django.conf import settings
    from django.test import override_settings

    from analysis.selectors import kept_documents_clear

    kept_documents_clear()  # nor the decoded run documents of the pages
    prefix = f"test-{uuid.uuid4().hex}"
    caches = {name: {**conf, "KEY_PREFIX": prefix} for name, conf in settings.CACHES.items()}
    with override_settings(CACHES=caches):
        yield


@pytest.fixture(scope="session", autouse=True)
def _fast_password_hasher(request):
    """Hash the test users' passwords with MD5, in tests only: PBKDF2's million rounds cost
    every user a test creates, and every login with a password, half a second or more of CPU.
    No test checks the hash itself; logging in with a password works the same with either."""
    if not request.config.pluginmanager.hasplugin("django"):
        yield
        return
    from django.test.utils import override_settings

    with override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]):
        yield


@pytest.fixture(scope="session", autouse=True)
def _files_of_this_worker(request):
    """Under pytest-xdist (`make test`), each worker process keeps kept uploads and export files
    in a folder of its own: their paths are named by row ids, which every worker's database
    (test_<name>_gw0, _gw1, …) hands out alike."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker or not request.config.pluginmanager.hasplugin("django"):
        yield
        return
    from django.conf import settings
    from django.test.utils import override_settings

    root = Path(settings.VAR_DIR) / "xdist" / worker
    with override_settings(IMPORTS_DIR=root / "imports", EXPORTS_DIR=root / "exports"):
        yield


@pytest.fixture
def alice(django_user_model):
    return django_user_model.objects.create_user("alice", "alice@example.org", "alice-password-1")


@pytest.fixture
def bob(django_user_model):
    return django_user_model.objects.create_user("bob", "bob@example.org", "bob-password-1")


@pytest.fixture
def alice_client(client, alice):
    client.force_login(alice)
    return client


ITEMS_CSV = (
    "id,text,control,metric:bleu,feature:border,meta:source\n"
    "i1,First passage,0,0.5,1,wiki\n"
    "i2,Second passage,0,0.25,0,wiki\n"
    "i3,Third passage,0,0.75,2,news\n"
    "i4,Fourth passage,0,0.1,0,news\n"
    "i5,Fifth passage,1,0.9,1,news\n"
)


def study_make(owner, *, slug="s1", preset="likert-0-7-coref", items=ITEMS_CSV, open=True,
               **design):
    """Create a study with items (what the `make_study` fixture gives, for module fixtures)."""
    from studies.services import items_import, study_create, study_open

    study = study_create(owner=owner, slug=slug, title=slug.upper(), preset=preset,
                         design=design or None)
    if items:
        items_import(study=study, data=items.encode(), filename="items.csv")
    if open:
        study_open(study=study)
    study.refresh_from_db()
    return study


@pytest.fixture
def make_study(db):
    """Create a study with items: make_study(owner, slug=..., preset=..., items=CSV, open=True)."""
    return study_make


@pytest.fixture
def participant(make_study, alice):
    from studies.services import participants_invite

    study = make_study(alice)
    return participants_invite(study=study, count=1)[0]


@pytest.fixture(scope="module")
def module_db(request, django_db_setup, django_db_blocker):
    """One transaction around a whole test module, rolled back after its last test.

    Rows a module-scoped fixture writes in ``with module_db.unblock():`` stay for every test of
    the module: each test's own transaction is a savepoint inside this one, rolled back after the
    test as usual, so a test that writes still leaves the next one what the fixture built. Only
    for modules whose tests all run in a transaction (no `transactional_db`, no `live_server`):
    those commit, and would see nothing of it or wipe it."""
    from django.db import transaction

    for item in request.session.items:
        if item.path != request.path:
            continue
        marker = item.get_closest_marker("django_db")
        if (marker and (marker.kwargs.get("transaction") or marker.kwargs.get("reset_sequences"))
                or {"transactional_db", "live_server"} & set(item.fixturenames)):
            pytest.fail(f"{item.nodeid} commits: it cannot share a module's transaction")
    with django_db_blocker.unblock():
        atomic = transaction.atomic()
        atomic.__enter__()
    try:
        yield django_db_blocker
    finally:
        with django_db_blocker.unblock():
            transaction.set_rollback(True)
            atomic.__exit__(None, None, None)


def _ids_from_one() -> None:
    """Start every empty table's ids at 1 again, as in a fresh database.

    The demo's assignment orders are seeded with its participants' ids (`participant_seed`), and
    the planted annotators' numbers tests expect are those of ids from 1; a parallel worker's
    database has handed out ids to the modules before (sequences do not roll back). A table
    that holds rows keeps its sequence."""
    from django.core.management.color import no_style
    from django.db import connection

    with connection.cursor() as cursor:
        for sequence in connection.introspection.sequence_list():
            table = connection.ops.quote_name(sequence["table"])
            cursor.execute(f"SELECT 1 FROM {table} LIMIT 1")  # noqa: S608 - a model's table
            if cursor.fetchone() is None:
                for sql in connection.ops.sequence_reset_by_name_sql(no_style(), [sequence]):
                    cursor.execute(sql)


@pytest.fixture(scope="module")
def demo_seeded(module_db):
    """The demo researcher and both demo studies, seeded once per module (see `module_db`):
    seeding them costs as much as a short test, and about a hundred tests only read them."""
    from demo.services import demo_seed

    with module_db.unblock():
        _ids_from_one()
        user, created = demo_seed()
    return user.pk, [(d.study.pk, [p.pk for p in d.participants], dict(d.behaviours))
                     for d in created]


@pytest.fixture
def demo_studies(demo_seeded, db):
    """What `demo_seed()` returns, (researcher, [DemoStudy, …]), read afresh for each test from
    the module's seeded rows, so no test sees another's changes to the objects."""
    from django.contrib.auth import get_user_model

    from annotation.selectors import questions_forget
    from demo.services import DemoStudy
    from studies.models import Participant, Study

    user_pk, seeded = demo_seeded
    demos = []
    for study_pk, participant_pks, behaviours in seeded:
        participants = Participant.objects.in_bulk(participant_pks)
        study = Study.objects.get(pk=study_pk)
        study.primary_question  # noqa: B018 - cached on the study, as demo_seed leaves it
        demos.append(DemoStudy(study=study,
                               participants=[participants[pk] for pk in participant_pks],
                               behaviours=dict(behaviours)))
    yield get_user_model().objects.get(pk=user_pk), demos
    # A question a test saved is forgotten by this process's cache when saved, but the rollback
    # restores the old one unseen: the next test must not be served the test's version.
    for study_pk, _, _ in seeded:
        questions_forget(study_id=study_pk)
