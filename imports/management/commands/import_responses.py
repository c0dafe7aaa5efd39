import csv
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import CommandError

from annotation.responses_import import responses_import
from core.problems import InputError
from core.responses import FORMATS, Upload
from studies.management.commands._common import (
    DataCommand,
    add_max_bytes,
    cli_max_bytes,
    get_study,
    read_file,
)


def _columns(text: str) -> list[str]:
    """Split --meta-columns like one CSV line, so a header holding a comma can be quoted."""
    return [c.strip() for c in next(csv.reader([text]), []) if c.strip()]


class Command(DataCommand):
    help = (
        "Import responses collected elsewhere. wide: one row per annotator (--annotator-column), "
        "one column per item (header = item id, or mapped by --item-map CSV column,item); a "
        "repeated item column is the duplicate presentation; --meta-columns are kept as "
        "participant metadata. long: annotator,item,value[,duration_ms,position]. judgments: "
        "annotator,items,choice[,question,comment], one comparative judgment per row (items: "
        "the outputs shown, in order, separated by |). The whole file is validated first; on "
        "any problem nothing is imported."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("file")
        parser.add_argument("--format", dest="fmt", choices=FORMATS, required=True)
        parser.add_argument("--annotator-column", default=None,
                            help="wide: the column holding the annotator id (e.g. 'Email address')")
        parser.add_argument("--item-map", default=None, help="CSV column,item")
        parser.add_argument("--value-map", default=None, help="CSV label,value")
        parser.add_argument("--meta-columns", default="",
                            help="comma-separated columns kept as participant metadata "
                                 "(quote a name holding a comma)")
        parser.add_argument("--ignore-columns", default="",
                            help="wide: comma-separated columns read by nothing (a name, a "
                                 "second e-mail; quote a name holding a comma)")
        parser.add_argument("--dry-run", action="store_true",
                            help="validate and summarise without importing")
        add_max_bytes(parser)

    def handle(self, *args: Any, slug: str, file: str, fmt: str, annotator_column: str | None,
               item_map: str | None, value_map: str | None, meta_columns: str, dry_run: bool,
               ignore_columns: str = "",
               max_bytes: int | None = None, **options: Any) -> None:
        study = get_study(slug)
        maps = {name: Upload(path, read_file(path)) if path else None
                for name, path in (("item_map", item_map), ("value_map", value_map))}
        read_file(file, check_only=True)
        # Read a chunk at a time where the file is streamed (long, PostgreSQL), whole elsewhere.
        try:
            with open(file, "rb") as data:
                summary = responses_import(
                    study=study, data=data, filename=file, fmt=fmt,
                    annotator_column=annotator_column, meta_columns=_columns(meta_columns),
                    ignore_columns=_columns(ignore_columns),
                    dry_run=dry_run, max_bytes=cli_max_bytes(max_bytes),
                    item_map=maps["item_map"], value_map=maps["value_map"],
                )
        except InputError as exc:
            raise CommandError(exc.render()) from None
        for warning in summary.warnings:
            self.stderr.write(self.style.WARNING(f"Warning: {file}: {warning}"))
        verb = "Would import" if dry_run else "Imported"
        self.stdout.write(
            f"{verb} {summary.answers} answers of {len(summary.annotators)} annotators on "
            f"{summary.items} items into {slug!r} ({summary.duplicates} repeated presentations, "
            f"{summary.blanks} blanks"
            + (f", {summary.merged_rows} rows merged" if summary.fmt == "wide" else "") + ")."
        )
