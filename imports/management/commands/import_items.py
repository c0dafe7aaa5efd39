from argparse import ArgumentParser
from typing import Any

from django.core.management.base import CommandError

from core.metrics.formats import FORMATS
from core.problems import Collector, InputError
from studies.management.commands._common import (
    DataCommand,
    add_max_bytes,
    cli_max_bytes,
    get_study,
    read_file,
)
from studies.services import coref_items_import, items_import


class Command(DataCommand):
    help = (
        "Import items into a draft study from CSV/TSV or JSONL: columns id (required), text or "
        "text_a/text_b, control (0/1), metric:<name>, feature:<name>, meta:<name>. Coreference "
        "items: GOLD --system SYS --format conll2012|rucoco-json, one document per item, "
        "metrics computed on import. The whole input is validated first; on any problem nothing "
        "is imported."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("file", help="the item file, or the gold annotation with --system")
        parser.add_argument("--system", help="the system annotation (coreference items)")
        parser.add_argument("--format", choices=FORMATS, dest="fmt",
                            help="the format of GOLD and SYS (required with --system)")
        add_max_bytes(parser)

    def handle(self, *args: Any, slug: str, file: str, system: str | None = None,
               fmt: str | None = None, max_bytes: int | None = None, **options: Any) -> None:
        if (system is None) != (fmt is None):
            raise CommandError("--system and --format go together (coreference items)")
        study = get_study(slug)
        warnings = Collector(file)
        try:
            if system is None or fmt is None:  # neither, by the check above
                count = items_import(study=study, data=read_file(file), filename=file,
                                     max_bytes=cli_max_bytes(max_bytes))
            else:
                count = coref_items_import(study=study, gold=read_file(file),
                                           system=read_file(system), gold_name=file,
                                           system_name=system, fmt=fmt, warnings=warnings)
        except InputError as exc:
            raise CommandError(exc.render()) from None
        if warnings:
            self.stderr.write(f"{warnings.count} warning(s): read as the CoNLL scorer reads it:")
            for problem in warnings.problems:
                self.stderr.write(f"  {problem}")
            if warnings.omitted:
                self.stderr.write(f"  … and {warnings.omitted} more")
        self.stdout.write(f"Imported {count} items into {slug!r}.")
