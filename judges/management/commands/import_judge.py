"""`import_judge SLUG NAME FILE`: a judge's answers into a study (docs/commands.md)."""

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from core.judges import DEFAULT_RUN
from core.problems import InputError
from judges.services import judge_answers_upload
from studies.management.commands._common import add_max_bytes, cli_max_bytes, get_study, read_file


class Command(BaseCommand):
    help = (
        "Import an LLM judge's answers into a study, kept apart from the annotators' "
        "(docs/judges.md): a long file item,value[,question,run,rationale] for scale questions, "
        "items,choice[,question,run,rationale] for comparative ones. A new NAME adds the judge "
        "with the metadata options; an existing one gets the file's runs (and any metadata "
        "given). A run the judge already has is refused unless --replace. The whole file is "
        "validated first; on any problem nothing changes."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("name", help="the judge's name, unique in the study")
        parser.add_argument("file", help="the judge's answers file (CSV, TSV or ;-separated)")
        parser.add_argument("--run", default=DEFAULT_RUN,
                            help="the label of the rows without a run column (default 1)")
        parser.add_argument("--replace", action="store_true",
                            help="replace the answers of a run the judge already has")
        parser.add_argument("--model", default="", help="the model, e.g. gpt-4o-mini")
        parser.add_argument("--prompt", default="", help="the prompt's text or version label")
        parser.add_argument("--judge-version", default="",
                            help="the judge's version (--version is the command's own)")
        parser.add_argument("--date", default="", help="the ISO date of the run (YYYY-MM-DD)")
        parser.add_argument("--temperature", type=float, default=None)
        parser.add_argument("--notes", default="")
        add_max_bytes(parser)

    def handle(self, *args: Any, slug: str, name: str, file: str, run: str, replace: bool,
               max_bytes: int | None = None, **options: Any) -> None:
        study = get_study(slug)
        read_file(file, check_only=True)
        try:
            with open(file, "rb") as data:
                done = judge_answers_upload(
                    study=study, name=name, data=data, filename=file, run=run, replace=replace,
                    max_bytes=cli_max_bytes(max_bytes), model=options["model"],
                    prompt=options["prompt"], version=options["judge_version"],
                    date=options["date"], temperature=options["temperature"],
                    notes=options["notes"])
        except InputError as exc:
            raise CommandError(exc.render()) from None
        for warning in done.warnings:
            self.stderr.write(f"warning: {warning}")
        replaced = f" (replacing {', '.join(done.replaced)})" if done.replaced else ""
        self.stdout.write(f"Imported {done.answers} answers of the judge {done.judge.name!r} "
                          f"into {slug!r}, run{'s' if len(done.runs) != 1 else ''} "
                          f"{', '.join(done.runs)}{replaced}.")
