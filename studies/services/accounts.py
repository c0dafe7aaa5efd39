"""Researchers' accounts made on the site itself: the open sign-up (CONCORD_OPEN_SIGNUP)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import transaction

from core.problems import InputError, Problem


@transaction.atomic
def researcher_signup(*, username: str, email: str, password: str) -> User:
    """Create a researcher account (not staff: no admin), as `create_researcher` does.

    The caller has validated the password against AUTH_PASSWORD_VALIDATORS; a user name or an
    e-mail address already taken (in any case) is refused, so that an invitation by address
    finds one account."""
    people = get_user_model().objects
    email = people.normalize_email(email.strip())
    if people.filter(username__iexact=username).exists():
        raise InputError([Problem("signup", None, "username",
                                  "this user name is taken; choose another")])
    if people.filter(email__iexact=email).exists():
        raise InputError([Problem("signup", None, "email",
                                  "an account already uses this e-mail address: log in, or ask "
                                  "for a new password on the log-in page")])
    user: User = people.create_user(username, email=email, password=password)
    return user
