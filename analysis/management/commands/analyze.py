import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from analysis.services import analysis_run_create, analysis_run_execute
from studies.models import Study


class Command(BaseCommand):
    help = ("Run every analysis of a study synchronously (the same service the Celery job runs), "
            "store the run and write the results document concord.results/1.")

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--level", choices=["nominal", "ordinal", "interval", "ratio"],
                            help="the alpha that drives trust coefficients and outliers "
                                 "(default: the study's, else ordinal)")
        parser.add_argument("--trust-variant", choices=["paper", "notebook"],
                            help="Algorithm 1 as printed (paper) or as the authors' code (notebook)")
        parser.add_argument("--simple-threshold", type=int,
                            help="at most this many distinct raw answers make an item simple (3)")
        parser.add_argument("--seed", type=int, help="seed of the bootstrap and sampling (0)")
        parser.add_argument("--output", metavar="FILE", help="write the document here (else stdout)")

    def handle(self, *args, slug, level, trust_variant, simple_threshold, seed, output, **options):
        try:
            study = Study.objects.select_related("scale").get(slug=slug)
        except Study.DoesNotExist:
            raise CommandError(f"no study {slug!r}") from None
        overrides = {k: v for k, v in {"level": level, "trust_variant": trust_variant,
                                       "simple_threshold": simple_threshold, "seed": seed}.items()
                     if v is not None}
        try:
            run = analysis_run_create(study=study, overrides=overrides, enqueue=False)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        run = analysis_run_execute(run_id=run.pk)
        text = json.dumps(run.results, indent=2, ensure_ascii=False, allow_nan=False)
        if output:
            Path(output).write_text(text + "\n", encoding="utf-8")
            self.stderr.write(f"Wrote {output} (run {run.pk}, {run.timings['analyses_s']} s).")
        else:
            self.stdout.write(text)
