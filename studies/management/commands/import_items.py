from django.core.management.base import BaseCommand, CommandError

from studies.problems import InputError
from studies.services import items_import

from ._common import get_study, read_file


class Command(BaseCommand):
    help = (
        "Import items into a draft study from CSV/TSV or JSONL: columns id (required), text or "
        "text_a/text_b, control (0/1), metric:<name>, feature:<name>, meta:<name>. The whole "
        "file is validated first; on any problem nothing is imported."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("file")

    def handle(self, *args, slug, file, **options):
        study = get_study(slug)
        try:
            count = items_import(study=study, data=read_file(file), filename=file)
        except InputError as exc:
            raise CommandError(exc.render()) from None
        self.stdout.write(f"Imported {count} items into {slug!r}.")
