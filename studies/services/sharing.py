"""Sharing: researchers' roles in a study (viewer, editor, owner), and invitations by e-mail."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.contrib.auth.tokens import default_token_generator
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from core.problems import InputError, Problem

from ..models import Membership, Study
from .lifecycle import study_event

logger = logging.getLogger(__name__)


def _owners_left(study: Study, *, without: Membership) -> bool:
    return study.memberships.filter(role=Membership.Role.OWNER).exclude(pk=without.pk).exists()


def _role(study: Study, role: str) -> str:
    if role not in Membership.Role.values:
        raise InputError([Problem(study.slug, None, "role",
                                  f"role must be one of {', '.join(Membership.Role.values)}, "
                                  f"not {role!r}")])
    return role


@transaction.atomic
def member_add(*, study: Study, username: str, role: str,
               user: User | None = None) -> Membership:
    """Share the study with a researcher who has an account, by user name, as viewer, editor or
    owner. Recorded. A user name without an account, or already sharing the study, is refused."""
    from django.contrib.auth import get_user_model

    Study.objects.select_for_update().filter(pk=study.pk).values_list("pk").get()
    role = _role(study, role)
    name = username.strip()
    people = get_user_model().objects
    colleague = people.filter(**{people.model.USERNAME_FIELD: name}, is_active=True).first()
    if not name or colleague is None:
        raise InputError([Problem(study.slug, None, "username",
                                  f"no researcher account is called {name!r}")])
    if study.memberships.filter(user=colleague).exists():
        raise InputError([Problem(study.slug, None, "username",
                                  f"{name} already has a role in this study; change it instead")])
    membership = Membership.objects.create(study=study, user=colleague, role=role, added_by=user)
    study_event(study=study, user=user, action="member_add", researcher=name, role=role)
    return membership


@transaction.atomic
def member_change(*, membership: Membership, role: str,
                  user: User | None = None) -> Membership:
    """Change a researcher's role; the study's last owner stays an owner. Recorded."""
    study = Study.objects.select_for_update().get(pk=membership.study_id)
    membership = Membership.objects.select_related("user").get(pk=membership.pk)
    role = _role(study, role)
    if role == membership.role:
        raise InputError([Problem(study.slug, None, "role",
                                  f"{membership.user.get_username()} is already {role}")])
    if membership.role == Membership.Role.OWNER and not _owners_left(study, without=membership):
        raise InputError([Problem(study.slug, None, "role",
                                  "the study's last owner stays an owner: make someone else an "
                                  "owner first")])
    before = membership.role
    membership.role = role
    membership.save(update_fields=["role"])
    study_event(study=study, user=user, action="member_change",
                researcher=membership.user.get_username(), **{"from": before, "to": role})
    return membership


@transaction.atomic
def member_remove(*, membership: Membership, user: User | None = None) -> None:
    """Take a researcher's role away (they then see the study as if it did not exist); the last
    owner cannot be removed. Recorded."""
    study = Study.objects.select_for_update().get(pk=membership.study_id)
    membership = Membership.objects.select_related("user").get(pk=membership.pk)
    if membership.role == Membership.Role.OWNER and not _owners_left(study, without=membership):
        raise InputError([Problem(study.slug, None, "role",
                                  "the study's last owner cannot be removed: make someone else "
                                  "an owner first")])
    membership.delete()
    study_event(study=study, user=user, action="member_remove",
                researcher=membership.user.get_username(), role=membership.role)


@dataclass(frozen=True)
class Invitation:
    """What `member_invite` did: the membership, whether it made the account, whether the mail
    went out."""

    membership: Membership
    new_account: bool
    mailed: bool


def _username_for(email: str) -> str:
    """A free user name from the address's local part: "Ana.Lima@x.org" -> "ana.lima", then
    "ana.lima2", "ana.lima3", ... when taken."""
    base = re.sub(r"[^a-z0-9.+_-]", "", email.rpartition("@")[0].lower())[:30] or "researcher"
    taken = {name.lower() for name in get_user_model().objects
             .filter(username__istartswith=base).values_list("username", flat=True)}
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}{n}"
    return name


@transaction.atomic
def _invite_record(*, study: Study, email: str, role: str,
                   user: User | None) -> tuple[Membership, bool]:
    Study.objects.select_for_update().filter(pk=study.pk).values_list("pk").get()
    role = _role(study, role)
    people = get_user_model().objects
    accounts = list(people.filter(email__iexact=email)[:2])
    if len(accounts) > 1:
        raise InputError([Problem(study.slug, None, "email",
                                  f"several accounts use {email}: add the colleague by user "
                                  "name instead")])
    new_account = not accounts
    if new_account:
        # No password yet (an unusable one): the colleague chooses it through the mail's link.
        try:
            with transaction.atomic():  # a savepoint: a name taken meanwhile is a clear 400
                colleague = people.create_user(_username_for(email), email=email,
                                               password=None)
        except IntegrityError:
            raise InputError([Problem(study.slug, None, "email",
                                      "another account was made with that name just now; "
                                      "send the invitation again")]) from None
    else:
        colleague = accounts[0]
        if not colleague.is_active:
            raise InputError([Problem(study.slug, None, "email",
                                      f"the account of {email} is disabled; ask the person who "
                                      "runs this site")])
        if study.memberships.filter(user=colleague).exists():
            raise InputError([Problem(study.slug, None, "email",
                                      f"{email} ({colleague.get_username()}) already has a role "
                                      "in this study; change it instead")])
    membership = Membership.objects.create(study=study, user=colleague, role=role, added_by=user)
    study_event(study=study, user=user, action="member_add",
                researcher=colleague.get_username(), role=role,
                invited="new account" if new_account else "existing account")
    return membership, new_account


def member_invite(*, study: Study, email: str, role: str, user: User,
                  site_url: str) -> Invitation:
    """Share the study with a colleague by e-mail address, as viewer, editor or owner. Recorded.

    An address without an account gets one (user name from the address, no password yet) and a
    mail with a link to choose the password: Django's password-reset token, so the link works
    once and for PASSWORD_RESET_TIMEOUT seconds, and the usual reset page sends a new one. An
    account that exists is added (a mail tells them; one never given a password gets the link
    again). ``site_url`` is where the links point (scheme and host, e.g. the request's). The mail
    is sent once the membership is stored; a mail server that fails leaves the membership in
    place and says so in ``mailed``.
    """
    email = get_user_model().objects.normalize_email(email.strip())
    membership, new_account = _invite_record(study=study, email=email, role=role, user=user)
    colleague = membership.user
    context = {
        "inviter": user.get_full_name() or user.get_username(),
        "inviter_email": user.email, "study": study, "role": role,
        "username": colleague.get_username(), "site_url": site_url.rstrip("/"),
        "login_url": site_url.rstrip("/") + reverse("login"),
        "study_url": site_url.rstrip("/") + reverse("studies:detail", args=[study.slug]),
        "days": max(1, round(settings.PASSWORD_RESET_TIMEOUT / 86400)),
        "set_password_url": None,
    }
    if not colleague.has_usable_password():
        context["set_password_url"] = site_url.rstrip("/") + reverse(
            "password_reset_confirm",
            kwargs={"uidb64": urlsafe_base64_encode(force_bytes(colleague.pk)),
                    "token": default_token_generator.make_token(colleague)})
    # One line: a title's line break must not reach a mail header.
    subject = " ".join(render_to_string("registration/invite_subject.txt", context).split())
    body = render_to_string("registration/invite_email.txt", context)
    try:
        send_mail(subject, body, None, [email])
    except Exception:  # noqa: BLE001 - the membership stands; the page says the mail failed
        logger.exception("invitation mail to a colleague of study %s not sent", study.slug)
        return Invitation(membership=membership, new_account=new_account, mailed=False)
    return Invitation(membership=membership, new_account=new_account, mailed=True)
