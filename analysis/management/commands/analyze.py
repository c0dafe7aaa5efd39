import argparse
import json
from pathlib import Path

from django.core.management.base import CommandError

from analysis.sections import analysis_run_fanned_here
from analysis.selectors import full_document
from analysis.services import analysis_run_create, analysis_run_execute
from core.results import SCHEMA
from core.settings import Knob, knobs
from studies.management.commands._common import DataCommand
from studies.models import Study


def _option(path: str) -> str:
    return "--" + path.replace("_", "-")


def _set_value(text: str):
    """Read the VALUE of ``--set KEY=VALUE`` as JSON (600, 0.5, null, ["A3"]), else as text."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


class Command(DataCommand):
    help = ("Run every analysis of a study synchronously (the same service the Celery job runs), "
            f"store the run and write the results document {SCHEMA} (every question).")

    def add_arguments(self, parser):
        parser.add_argument("slug")
        # One option per top-level analysis setting, with the choices and help of AnalysisSettings.
        for path, spec in knobs().items():
            if "." in path:
                continue
            self._add_setting(parser, path, spec)
        parser.add_argument(
            "--set", action="append", default=[], metavar="KEY=VALUE", dest="set_values",
            help="any analysis setting by its key path, e.g. heuristics.slow.threshold_s=600 "
                 "(VALUE read as JSON when it is JSON); repeat for several")
        parser.add_argument("--output", metavar="FILE", help="write the document here (else stdout)")
        parser.add_argument("--full", action="store_true",
                            help="write the full document, every item's records included "
                                 "(items, simple_items, item_gaps, item_labels: it grows with "
                                 "the items; the run stores them apart)")
        parser.add_argument("--fanout", action="store_true",
                            help="run the fanned-out protocol of a worker cluster here, one task "
                                 "after the other (analysis.sections: the same document), and "
                                 "print its total work and critical path")

    @staticmethod
    def _add_setting(parser, path: str, spec: Knob) -> None:
        text = f"{spec.help} (default: the study's)"
        if spec.kind == "choice":
            parser.add_argument(_option(path), dest=path, choices=spec.choices, help=text)
        elif spec.kind == "pseudonyms":
            parser.add_argument(_option(path), dest=path, metavar="A3,A7",
                                type=lambda v: [n.strip() for n in v.split(",") if n.strip()],
                                help=text)
        elif spec.kind == "bool":  # --judges-as-annotators / --no-judges-as-annotators
            parser.add_argument(_option(path), dest=path, action=argparse.BooleanOptionalAction,
                                default=None, help=text)
        else:
            parser.add_argument(_option(path), dest=path, type=int if spec.kind == "int" else float,
                                help=f"{text}; {spec.bounds()}")

    def handle(self, *args, slug, output, set_values, full=False, fanout=False, **options):
        try:
            study = Study.objects.get(slug=slug)
        except Study.DoesNotExist:
            raise CommandError(f"no study {slug!r}") from None
        overrides = {path: options[path] for path in knobs()
                     if "." not in path and options.get(path) is not None}
        for item in set_values:
            key, sep, value = item.partition("=")
            if not sep or not key:
                raise CommandError(f"--set takes KEY=VALUE, not {item!r}")
            *parents, name = key.split(".")
            node = overrides
            for part in parents:
                node = node.setdefault(part, {})
                if not isinstance(node, dict):
                    raise CommandError(f"--set {key}: {part} is not a table of settings")
            node[name] = _set_value(value)
        try:
            run = analysis_run_create(study=study, overrides=overrides, enqueue=False)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        try:
            run = (analysis_run_fanned_here(run_id=run.pk) if fanout
                   else analysis_run_execute(run_id=run.pk))
        except ValueError as exc:  # e.g. an excluded pseudonym the study does not have
            raise CommandError(f"run {run.pk} failed: {exc}") from None
        document = full_document(document=run.results) if full else run.results
        text = json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False)
        if output:
            Path(output).write_text(text + "\n", encoding="utf-8")
            self.stderr.write(f"Wrote {output} (run {run.pk}, {run.timings['analyses_s']} s).")
        else:
            self.stdout.write(text)
        figures = (run.timings or {}).get("fanout")
        if figures:
            self.stderr.write(fanout_summary(figures))


def fanout_summary(figures: dict) -> str:
    """One line: a fanned-out run's tasks, total work and critical path (its chain)."""
    path = " -> ".join(figures["critical_path"])
    ratio = figures["work_s"] / figures["critical_path_s"] if figures["critical_path_s"] else 0
    return (f"{figures['tasks']} tasks: total work {figures['work_s']:.1f} s, critical path "
            f"{figures['critical_path_s']:.1f} s ({path}); {ratio:.1f}x parallelism")
