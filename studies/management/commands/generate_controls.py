from django.core.management.base import CommandError

from core.problems import InputError
from studies.services import controls_generate

from ._common import DataCommand, get_study


class Command(DataCommand):
    help = (
        "Add N random control pairs to a draft sentence-pair study, built from its own sentences "
        "(never a sentence with its own partner); --seed makes the draw reproducible (default: "
        "the study's seed)."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("n", type=int)
        parser.add_argument("--seed", type=int, default=None)

    def handle(self, *args, slug, n, seed=None, **options):
        study = get_study(slug)
        try:
            count = controls_generate(study=study, n=n, seed=seed)
        except InputError as exc:
            raise CommandError(exc.render()) from None
        self.stdout.write(f"Added {count} control pairs to {slug!r}.")
