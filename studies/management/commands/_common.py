"""Shared pieces of the management commands: owner lookup and reading files."""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from studies.models import Study


class DataCommand(BaseCommand):
    """A command that reads or writes a study's data: it skips Django's system checks.

    The checks import every page's code to check the URLs (the analyses' compiled kernels and
    scipy among it): about 2 s of every command's start on a 2-core machine, for an export or an
    analysis that may itself take 4 s. They still run where configuration changes: `migrate`
    (`make run`, every deployment) and `manage.py check --deploy` run them all.
    """

    requires_system_checks: list[str] = []  # noqa: RUF012 (Django's own attribute)


def resolve_owner(username: str | None):
    """Return the owner: the named user, or the only superuser when none is named."""
    users = get_user_model().objects
    if username:
        try:
            return users.get(username=username)
        except users.model.DoesNotExist:
            raise CommandError(f"no user {username!r}; create one with `manage.py createsuperuser`") from None
    supers = list(users.filter(is_superuser=True)[:2])
    if len(supers) != 1:
        raise CommandError("name the study's owner with --owner USERNAME")
    return supers[0]


def read_file(path: str, *, check_only: bool = False) -> bytes:
    """Return a file's bytes (``check_only``: only check that it is a file), or stop the
    command with "no such file"."""
    file = Path(path)
    if not file.is_file():
        raise CommandError(f"{path}: no such file")
    return b"" if check_only else file.read_bytes()


def get_study(slug: str) -> Study:
    try:
        return Study.objects.get(slug=slug)
    except Study.DoesNotExist:
        raise CommandError(f"no study {slug!r}") from None


def add_max_bytes(parser) -> None:
    """Add --max-bytes: the command line's size limit, separate from the browser's."""
    parser.add_argument(
        "--max-bytes", type=int, default=None,
        help="refuse a file larger than this many bytes (default CONCORD_CLI_MAX_BYTES, "
             "2 GiB; the browser's upload limit CONCORD_MAX_UPLOAD_BYTES does not apply here)")


def cli_max_bytes(value: int | None) -> int:
    from django.conf import settings
    return settings.CONCORD_CLI_MAX_BYTES if value is None else value
