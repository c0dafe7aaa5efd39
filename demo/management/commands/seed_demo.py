from argparse import ArgumentParser
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand
from django.urls import reverse

from analysis.services import analysis_run_create, analysis_run_execute
from demo.services import DEMO_PASSWORD, DEMO_USER, demo_seed
from studies.models import Study


class Command(BaseCommand):
    help = ("Create the demo researcher and three demo studies (Likert 0–7 coreference and 1–5 "
            "similarity with annotators of planted behaviours; four systems over 30 shared "
            "sources with a planted order and tie, rated and compared pairwise), analyse them, "
            "then print the login and each study's open link.")

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--reset", action="store_true", help="Recreate the demo studies.")
        parser.add_argument("--no-analysis", action="store_true",
                            help="Leave the new demo studies without a finished analysis.")

    def handle(self, *args: Any, reset: bool, no_analysis: bool, **options: Any) -> None:
        _, created = demo_seed(reset=reset)
        for demo in created:
            self.stdout.write(f"Created {demo.study.slug}: {demo.study.items.count()} items, "
                              f"{len(demo.participants)} annotators with answers.")
            if not no_analysis:
                # Results are there on the first visit: the run a researcher would start, made
                # here, in this process (no worker needed).
                run = analysis_run_create(study=demo.study, enqueue=False)
                run = analysis_run_execute(run_id=run.pk)
                self.stdout.write(f"Analysed {demo.study.slug} (run {run.pk}).")
        site = settings.SITE_URL
        self.stdout.write("")
        self.stdout.write(f"Researcher login: {site}{reverse('login')}  "
                          f"user {DEMO_USER!r}, password {DEMO_PASSWORD!r}")
        self.stdout.write("Open links (each browser, or private window, is a new annotator):")
        for study in Study.objects.filter(slug__startswith="demo-").order_by("slug"):
            self.stdout.write(f"  {study.slug}: "
                              f"{site}{reverse('annotation:join', args=[study.open_token])}")
