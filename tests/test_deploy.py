"""Production configuration: Django's deploy checks and the compose file."""

import os
import re
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from tests.conftest import require, settings_from_env

ROOT = Path(__file__).resolve().parent.parent
PRODUCTION = {
    "SECRET_KEY": secrets.token_urlsafe(60),
    "DEBUG": "0",
    "ALLOWED_HOSTS": "concord.example.org",
    "SITE_URL": "https://concord.example.org",
    "SECURE_SSL_REDIRECT": "1",
    "SECURE_HSTS_SECONDS": "31536000",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": "1",
    "SECURE_HSTS_PRELOAD": "1",
}


def production_env(tmp_path) -> dict[str, str]:
    # Only production's variables: not the browser tests' async override, not a test DEBUG.
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"}
    return {**env, **PRODUCTION, "CONCORD_VAR_DIR": str(tmp_path)}


def test_it_passes_the_deploy_checks_with_production_values(tmp_path):
    env = production_env(tmp_path)
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def env_example() -> dict[str, str]:
    """Return the variables of .env.example, read as docker compose reads an env file."""
    values = {}
    for line in (ROOT / ".env.example").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, _, value = line.partition("=")
            values[name.strip()] = value
    return values


def manage(tmp_path, variables: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"}
    env.update(variables, CONCORD_VAR_DIR=str(tmp_path))
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def test_it_passes_the_deploy_checks_with_the_values_of_env_example(tmp_path):
    # Everything as .env.example has it, but the one value it asks to replace.
    variables = {**env_example(), "SECRET_KEY": secrets.token_urlsafe(50)}
    result = manage(tmp_path, variables, "check", "--deploy", "--fail-level", "WARNING")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "System check identified no issues (0 silenced)." in result.stdout, output
    assert "WARNING" not in output and "security.W" not in output


def test_it_refuses_to_start_on_the_secret_key_placeholder_of_env_example(tmp_path):
    result = manage(tmp_path, env_example(), "check")
    assert result.returncode != 0
    assert "ImproperlyConfigured: SECRET_KEY is the placeholder of .env.example" in result.stderr
    assert "change-me-to" not in result.stderr.replace(".env.example", "")  # never echoed


@pytest.mark.parametrize(("key", "weakness"), [
    ("s3cr3t-" * 5, "is 35 characters long"),
    ("ab" * 30, "has only 2 distinct characters"),
    ("django-insecure-" + "q7Zp-w3Xk9" * 5, "is a development key"),
])
def test_it_refuses_a_weak_secret_key_with_debug_off(key, weakness):
    with pytest.raises(ImproperlyConfigured, match=f"^SECRET_KEY {weakness}"):
        settings_from_env(DEBUG="0", SECRET_KEY=key)


def test_it_takes_any_secret_key_with_debug_on():
    assert settings_from_env(DEBUG="1", SECRET_KEY="dev")["SECRET_KEY"] == "dev"


def test_it_reads_the_samesite_policies_of_the_cookies(tmp_path):
    built = settings_from_env(SITE_URL="https://concord.example.org", CSRF_COOKIE_SAMESITE="None",
                              SESSION_COOKIE_SAMESITE="strict")
    assert built["CSRF_COOKIE_SAMESITE"] == "None" and built["SESSION_COOKIE_SAMESITE"] == "Strict"
    default = settings_from_env(CSRF_COOKIE_SAMESITE=None, SESSION_COOKIE_SAMESITE=None)
    assert default["CSRF_COOKIE_SAMESITE"] == default["SESSION_COOKIE_SAMESITE"] == "Lax"


def test_it_refuses_samesite_none_on_cookies_that_are_not_secure():
    with pytest.raises(ImproperlyConfigured, match="CSRF_COOKIE_SAMESITE=None needs CSRF_COOKIE_SECURE=1"):
        settings_from_env(SITE_URL="http://127.0.0.1:8000", CSRF_COOKIE_SECURE=None,
                          CSRF_COOKIE_SAMESITE="None")


def test_it_refuses_an_unknown_samesite_policy():
    with pytest.raises(ImproperlyConfigured, match="SESSION_COOKIE_SAMESITE='sideways' is not a SameSite"):
        settings_from_env(SESSION_COOKIE_SAMESITE="sideways")


def test_it_refuses_a_malformed_boolean_setting(tmp_path):
    env = {**os.environ, "DEBUG": "maybe", "CONCORD_VAR_DIR": str(tmp_path)}
    result = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode != 0 and "DEBUG='maybe' is not a boolean" in result.stderr


def test_the_compose_file_is_valid(tmp_path):
    require(shutil.which("docker-compose") is not None, "docker-compose (apt) is not installed")
    for name in ("docker-compose.yml", "Dockerfile"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copy(ROOT / ".env.example", tmp_path / ".env")
    result = subprocess.run(["docker-compose", "config", "-q"], cwd=tmp_path, capture_output=True,
                            text=True, timeout=60, env={**os.environ, "POSTGRES_PASSWORD": "x"})
    assert result.returncode == 0, result.stderr


def test_every_environment_variable_of_the_settings_is_documented():
    source = (ROOT / "config" / "settings.py").read_text()
    read = set(re.findall(r'\benv(?:bool|int|float|list|samesite)\(\s*"([A-Z0-9_]+)"', source))
    read |= set(re.findall(r'os\.environ(?:\.get\(|\[)\s*"([A-Z0-9_]+)"', source))
    read |= set(re.findall(r'\benv\.\w+\(\s*"([A-Z0-9_]+)"', source))
    assert {"SECRET_KEY", "DATABASE_URL", "DATABASE_POOL_TIMEOUT", "EMAIL_URL"} <= read
    table = (ROOT / "docs" / "deployment.md").read_text().split("## Environment")[1].split("\n## ")[0]
    documented = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", table))
    assert read - documented == set(), "undocumented in docs/deployment.md"


NO_MAIL = {"EMAIL_URL": None, "EMAIL_HOST": None}


def test_it_prints_mails_on_the_console_without_a_mail_server():
    built = settings_from_env(**NO_MAIL)
    assert built["EMAIL_BACKEND"] == "django.core.mail.backends.console.EmailBackend"


def test_it_sends_mails_through_the_smtp_server_of_email_url():
    built = settings_from_env(**{**NO_MAIL, "EMAIL_URL": "smtp+tls://concord:pw@smtp.example.org:587"})
    assert built["EMAIL_BACKEND"] == "django.core.mail.backends.smtp.EmailBackend"
    assert (built["EMAIL_HOST"], built["EMAIL_PORT"], built["EMAIL_HOST_USER"],
            built["EMAIL_HOST_PASSWORD"], built["EMAIL_USE_TLS"], built["EMAIL_USE_SSL"]) == (
        "smtp.example.org", 587, "concord", "pw", True, False)


def test_it_sends_mails_through_email_host_and_its_companions():
    built = settings_from_env(**{**NO_MAIL, "EMAIL_HOST": "mail.example.org", "EMAIL_PORT": "465",
                                 "EMAIL_USE_TLS": "0", "EMAIL_USE_SSL": "1",
                                 "DEFAULT_FROM_EMAIL": "Concord <c@example.org>"})
    assert built["EMAIL_BACKEND"] == "django.core.mail.backends.smtp.EmailBackend"
    assert (built["EMAIL_HOST"], built["EMAIL_PORT"], built["EMAIL_USE_SSL"]) == (
        "mail.example.org", 465, True)
    assert built["DEFAULT_FROM_EMAIL"] == "Concord <c@example.org>"


def test_it_refuses_tls_and_ssl_together():
    with pytest.raises(ImproperlyConfigured, match="EMAIL_USE_TLS and EMAIL_USE_SSL"):
        settings_from_env(**{**NO_MAIL, "EMAIL_HOST": "mail.example.org", "EMAIL_USE_SSL": "1"})
