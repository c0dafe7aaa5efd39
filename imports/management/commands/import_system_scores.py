from argparse import ArgumentParser
from typing import Any

from django.core.management.base import CommandError

from core.problems import InputError
from studies.management.commands._common import (
    DataCommand,
    add_max_bytes,
    cli_max_bytes,
    get_study,
    read_file,
)
from studies.services import system_scores_import


class Command(DataCommand):
    help = (
        "Import system-level metric scores into a study from a CSV with the columns system, "
        "metric, value (one row per system and metric; header in any case). The file replaces "
        "the study's scores of the metrics it names; a system no item names is skipped with a "
        "warning. The whole file is validated first; on any problem nothing changes."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("file", help="the system,metric,value file")
        add_max_bytes(parser)

    def handle(self, *args: Any, slug: str, file: str, max_bytes: int | None = None,
               **options: Any) -> None:
        study = get_study(slug)
        try:
            done = system_scores_import(study=study, data=read_file(file), filename=file,
                                        max_bytes=cli_max_bytes(max_bytes))
        except InputError as exc:
            raise CommandError(exc.render()) from None
        if done.warnings:
            self.stderr.write(f"{done.warnings.count} row(s) skipped:")
            for problem in done.warnings.problems:
                self.stderr.write(f"  {problem}")
            if done.warnings.omitted:
                self.stderr.write(f"  … and {done.warnings.omitted} more")
        self.stdout.write(f"Imported {done.rows} system-level scores of "
                          f"{', '.join(done.metrics)} into {slug!r} (replacing {done.replaced}).")
