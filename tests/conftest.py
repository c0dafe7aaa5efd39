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


@pytest.fixture
def alice(django_user_model):
    return django_user_model.objects.create_user("alice", "alice@example.org", "alice-password-1")


@pytest.fixture
def bob(django_user_model):
    return django_user_model.objects.create_user("bob", "bob@example.org", "bob-password-1")


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


@pytest.fixture
def make_study(db):
    """Create a study with items: make_study(owner, slug=..., preset=..., items=CSV, open=True)."""
    from studies.services import items_import, study_create, study_open

    def make(owner, *, slug="s1", preset="likert-0-7-coref", items=ITEMS_CSV, open=True, **design):
        study = study_create(owner=owner, slug=slug, title=slug.upper(), preset=preset,
                             design=design or None)
        if items:
            items_import(study=study, data=items.encode(), filename="items.csv")
        if open:
            study_open(study=study)
        study.refresh_from_db()
        return study

    return make


@pytest.fixture
def participant(make_study, alice):
    from studies.services import participants_invite

    study = make_study(alice)
    return participants_invite(study=study, count=1)[0]
