"""Sharing: researchers' roles in a study (viewer, editor, owner)."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction

from core.problems import InputError, Problem

from ..models import Membership, Study
from .lifecycle import study_event


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
