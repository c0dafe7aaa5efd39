from django.core.management.base import CommandError

from core.problems import InputError
from studies.definitions import load_definition
from studies.presets import preset_names
from studies.services import study_create, study_create_from_definition

from ._common import DataCommand, read_file, resolve_owner


class Command(DataCommand):
    help = (
        "Create a study from a definition file (JSON or TOML; see docs/commands.md) or from a "
        "scale preset: `create_study --definition FILE` or `create_study SLUG --preset NAME`."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug", nargs="?", help="Study slug (with --preset).")
        parser.add_argument("--definition", metavar="FILE", help="JSON or TOML study definition.")
        parser.add_argument("--preset", choices=preset_names(), help="A scale preset (one question) or a study preset (several).")
        parser.add_argument("--title", help="Title (with --preset; default: the slug).")
        parser.add_argument("--language", default="en", choices=["en", "fr"])
        parser.add_argument("--owner", metavar="USERNAME",
                            help="Owner (default: the only superuser).")

    def handle(self, *args, slug, definition, preset, title, language, owner, **options):
        if bool(definition) == bool(preset):
            raise CommandError("give either --definition FILE or SLUG --preset NAME")
        user = resolve_owner(owner)
        try:
            if definition:
                spec = load_definition(read_file(definition), definition)
                study = study_create_from_definition(owner=user, definition=spec)
            else:
                if not slug:
                    raise CommandError("--preset needs the study's SLUG")
                study = study_create(owner=user, slug=slug, title=title or slug, preset=preset,
                                     language=language)
        except InputError as exc:
            raise CommandError(exc.render()) from None
        for question in study.question_list:
            if question.is_comparative:
                options = ", ".join(f"{k} {v}" for k, v in question.comparison.items())
                self.stdout.write(f"Question {question.key!r}: {question.get_kind_display()} "
                                  f"({options}).")
                continue
            reductions = ", ".join(r["name"] for r in question.reductions) or "none"
            self.stdout.write(f"Question {question.key!r}: {question.preset or 'custom scale'}, "
                              f"{len(question.values)} values, reductions: {reductions}.")
        self.stdout.write(f"Created study {study.slug!r} with {len(study.question_list)} "
                          f"question(s).")
