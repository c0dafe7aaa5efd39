import codecs
from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError

from core.files import atomic_write
from exports.services import (
    FORMATS,
    TEXT_FORMATS,
    WHATS,
    ExportError,
    export_open,
    export_validate,
)
from studies.management.commands._common import DataCommand, get_study


class Command(DataCommand):
    help = (
        "Export a study: responses (long format: csv, jsonl, parquet), revisions (every "
        "revision of every answer: csv, jsonl), matrix (annotator × item, "
        "csv), items (the import_items columns: csv, jsonl), results (the latest results "
        "document, json) or bundle (zip: data, settings, results, code version, README). "
        "--output - writes a text format to stdout. Written to a temporary file and renamed, so "
        "a failed export leaves nothing behind. Columns: docs/exports.md."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--what", required=True, help=" | ".join(WHATS))
        parser.add_argument("--format", dest="fmt", metavar="FORMAT",
                            help=f"{' | '.join(FORMATS)} (default: the first format of --what: "
                                 + ", ".join(f"{w} {f[0]}" for w, f in WHATS.items()) + ")")
        parser.add_argument("--output", required=True, metavar="FILE",
                            help="the file to write, or - for stdout (csv, jsonl, json)")

    def handle(self, *args: Any, slug: str, what: str, fmt: str | None, output: str,
               **options: Any) -> None:
        try:
            what, fmt = export_validate(what=what, fmt=fmt)
        except ExportError as exc:
            raise CommandError(f"--{exc.option}: {exc}") from None
        if output == "-" and fmt not in TEXT_FORMATS:
            raise CommandError(f"--output -: {fmt} is binary; write it to a file")
        target = None if output == "-" else Path(output)
        if target is not None and not target.parent.is_dir():
            raise CommandError(f"--output {output}: the folder {target.parent} does not exist")
        study = get_study(slug)
        try:
            export = export_open(study=study, what=what, fmt=fmt)
        except ExportError as exc:
            raise CommandError(str(exc)) from None
        raw = getattr(self.stdout._out, "buffer", None)  # the real stdout: bytes as they are
        if target is None and raw is not None:
            self.stdout.flush()
            for chunk in export.chunks:
                raw.write(chunk)
            raw.flush()
        elif target is None:
            decoder = codecs.getincrementaldecoder("utf-8")()
            for chunk in export.chunks:
                self.stdout.write(decoder.decode(chunk), ending="")
            self.stdout.write(decoder.decode(b"", final=True), ending="")
            self.stdout.flush()
        else:
            size = atomic_write(target, export.chunks)
            self.stderr.write(f"Wrote {output}: {what} as {fmt}, "
                              f"{self._rows(export.counts)}{size} bytes.")

    @staticmethod
    def _rows(counts: dict[str, int]) -> str:
        return "".join(f"{n} {table} rows, " for table, n in counts.items())
