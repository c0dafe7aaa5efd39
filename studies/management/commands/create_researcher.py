"""Create a researcher account (an operator's command): a non-staff user who logs in and
creates studies. The password is read from a prompt, from --password-file, or generated."""

from __future__ import annotations

import getpass
import secrets
import sys

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from ._common import read_file


class Command(BaseCommand):
    help = ("Create a researcher account: a non-staff user who can log in, create studies and be "
            "invited to colleagues' studies. Researchers never get the admin.")

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--email", default="", help="Where password resets are sent.")
        parser.add_argument("--password-file", help="Read the password from this file's first "
                                                    "line (for scripts).")
        parser.add_argument("--generate", action="store_true",
                            help="Generate a random password and print it once.")

    def handle(self, *args, username, email, password_file, generate, **options):
        users = get_user_model().objects
        if users.filter(username=username).exists():
            raise CommandError(f"a user {username!r} already exists")
        if generate:
            password = secrets.token_urlsafe(16)
        elif password_file:
            password = read_file(password_file).decode("utf-8", "replace").splitlines()[0:1]
            password = password[0] if password else ""
        elif sys.stdin.isatty():
            password = getpass.getpass("Password: ")
            if password != getpass.getpass("Password (again): "):
                raise CommandError("the two passwords differ")
        else:
            raise CommandError("give --password-file FILE or --generate (no terminal to ask)")
        user = users.model(username=username, email=email, is_staff=False, is_superuser=False)
        try:
            validate_password(password, user)
        except ValidationError as exc:
            raise CommandError("the password is too weak: " + " ".join(exc.messages)) from None
        user.set_password(password)
        user.save()
        self.stdout.write(f"Created researcher {username!r} (not staff: no admin access).")
        if generate:
            self.stdout.write(f"Password (shown once): {password}")
