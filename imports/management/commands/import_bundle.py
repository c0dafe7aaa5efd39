from argparse import ArgumentParser
from typing import Any

from django.core.management.base import CommandError

from core.problems import InputError
from imports.bundles import bundle_import
from studies.management.commands._common import DataCommand, read_file, resolve_owner


class Command(DataCommand):
    help = (
        "Replay a methods bundle (the bundle export's zip): create a closed study with its "
        "definition, items, every revision of every answer with its duration, and the run's "
        "analysis settings, so that `analyze` gives the bundle's results.json again. Every file "
        "is validated first; on any problem nothing is created. See docs/exports.md."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("file", help="the bundle (a zip written by `export --what bundle`)")
        parser.add_argument("--slug", metavar="NEW",
                            help="the new study's slug (default: the bundle's)")
        parser.add_argument("--owner", metavar="USERNAME",
                            help="Owner (default: the only superuser).")

    def handle(self, *args: Any, file: str, slug: str | None, owner: str | None,
               **options: Any) -> None:
        user = resolve_owner(owner)
        try:
            done = bundle_import(data=read_file(file), filename=file, owner=user, slug=slug)
        except InputError as exc:
            raise CommandError(exc.render().replace("nothing was imported",
                                                    "nothing was created")) from None
        study = done.study
        self.stdout.write(
            f"Created study {study.slug!r} (closed) from {file}: {done.items} items, "
            f"{done.annotators} annotators, {done.presentations} presentations, "
            f"{done.revisions} revisions, {done.answers} answers. "
            f"Run `python manage.py analyze {study.slug}` to compute its results again.")
