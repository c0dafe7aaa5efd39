"""Production configuration: Django's deploy checks and the compose file."""

import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import require

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
