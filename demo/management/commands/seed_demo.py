from django.conf import settings
from django.core.management.base import BaseCommand
from django.urls import reverse

from demo.services import DEMO_PASSWORD, DEMO_USER, demo_seed
from studies.models import Participant, Study


class Command(BaseCommand):
    help = ("Create the demo researcher and two demo studies (Likert 0–7 coreference and 1–5 "
            "similarity) with synthetic responses from annotators with planted behaviours, then "
            "print the login and an annotator link.")

    def add_arguments(self, parser):
        parser.add_argument("--reset", action="store_true", help="Recreate the demo studies.")

    def handle(self, *args, reset, **options):
        _, created = demo_seed(reset=reset)
        for demo in created:
            self.stdout.write(f"Created {demo.study.slug}: {demo.study.items.count()} items, "
                              f"{len(demo.participants)} annotators with answers.")
        site = settings.SITE_URL
        self.stdout.write("")
        self.stdout.write(f"Researcher login: {site}{reverse('login')}  "
                          f"user {DEMO_USER!r}, password {DEMO_PASSWORD!r}")
        for study in Study.objects.filter(slug__startswith="demo-").order_by("slug"):
            unused = Participant.objects.filter(study=study, label="try me",
                                                n_answered=0).first()
            if unused:
                self.stdout.write(f"Annotator link ({study.slug}): "
                                  f"{site}{reverse('annotation:consent', args=[unused.token])}")
