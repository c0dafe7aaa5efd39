"""Researchers' accounts: the password-reset mail, throttled; the log-in page; the open sign-up;
the limit on invitations by e-mail.

Django's own reset view sends a mail for every POST: 30 mails in 0.9 s to one address, a mail
bomb run through our server. Two limits, each an hour's window in the shared cache
(`studies.ratelimit`): a client address asks at most CONCORD_PASSWORD_RESET_PER_ADDRESS times
(then a 429 page says to wait), and one e-mail address receives at most
CONCORD_PASSWORD_RESET_PER_EMAIL mails (further requests get the usual "sent" page and no mail,
so the answer still says nothing about which addresses have accounts). An account made by an
invitation and never given a password can ask for a link too (Django's own form skips accounts
without a usable password, so an expired invitation would otherwise be a dead end).

The sign-up page exists only when CONCORD_OPEN_SIGNUP is on (else 404, and the log-in page does
not link it), under CONCORD_SIGNUP_PER_ADDRESS accounts an hour per client address. An owner
sends at most CONCORD_INVITES_PER_HOUR invitations an hour (`invite_allowed`).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model, login
from django.contrib.auth import views as auth_views
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.forms import PasswordResetForm
from django.contrib.auth.models import AnonymousUser
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from core.problems import InputError

from .forms import SignupForm
from .ratelimit import client_address, window_count
from .services import researcher_signup

logger = logging.getLogger(__name__)

HOUR = 3600


class ResetForm(PasswordResetForm):
    """Django's reset form that also reaches invited accounts still without a password."""

    def get_users(self, email: str) -> Iterator[Any]:
        field = get_user_model().get_email_field_name()
        people = get_user_model()._default_manager.filter(
            **{f"{field}__iexact": email, "is_active": True})
        return (person for person in people
                if getattr(person, field).casefold() == email.casefold())


class ThrottledPasswordResetView(auth_views.PasswordResetView):
    """Django's PasswordResetView under the two limits above."""

    form_class = ResetForm

    def form_valid(self, form: PasswordResetForm) -> HttpResponse:
        per_address = int(settings.CONCORD_PASSWORD_RESET_PER_ADDRESS)
        per_email = int(settings.CONCORD_PASSWORD_RESET_PER_EMAIL)
        email = form.cleaned_data["email"].strip().lower()
        # A digest, not the address, in the cache key: Redis holds no e-mail addresses.
        digest = hashlib.sha256(email.encode()).hexdigest()[:32]
        try:
            if per_address and window_count(f"reset:addr:{client_address(self.request)}",
                                            seconds=HOUR) > per_address:
                logger.warning("password reset refused: over %d an hour from %s", per_address,
                               client_address(self.request))
                return self._too_many(form)
            if per_email and window_count(f"reset:mail:{digest}", seconds=HOUR) > per_email:
                logger.warning("password reset mail not sent: over %d an hour to one address",
                               per_email)
                return HttpResponseRedirect(self.get_success_url())
        except Exception:  # noqa: BLE001 - a failed cache must not stop a locked-out researcher
            logger.exception("password-reset limits not checked: the cache failed")
        return super().form_valid(form)

    def _too_many(self, form: PasswordResetForm) -> HttpResponse:
        context: dict[str, Any] = self.get_context_data(form=form, too_many=True)
        response = self.render_to_response(context, status=429)
        response["Retry-After"] = str(HOUR)
        return response


class LoginView(auth_views.LoginView):
    """Django's log-in page, linking the sign-up page when sign-up is open."""

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context: dict[str, Any] = super().get_context_data(**kwargs)
        context["open_signup"] = bool(settings.CONCORD_OPEN_SIGNUP)
        return context


def _under_limit(key: str, limit: int) -> bool:
    """Count one in this hour's window of ``key``; False beyond ``limit`` (0: no limit). A cache
    that fails lets the request through (logged): these limits slow abuse, they guard no data."""
    if not limit:
        return True
    try:
        return window_count(key, seconds=HOUR) <= limit
    except Exception:  # noqa: BLE001
        logger.exception("account limit %s not checked: the cache failed", key.split(":")[0])
        return True


def invite_allowed(*, user: AbstractBaseUser | AnonymousUser) -> bool:
    """Count one invitation by e-mail for ``user``; False once over CONCORD_INVITES_PER_HOUR."""
    return _under_limit(f"invite:user:{user.pk}", int(settings.CONCORD_INVITES_PER_HOUR))


@require_http_methods(["GET", "POST"])
def signup(request: HttpRequest) -> HttpResponse:
    """Make a researcher account (404 unless CONCORD_OPEN_SIGNUP); log it in."""
    if not settings.CONCORD_OPEN_SIGNUP:
        raise Http404("Sign-up is closed on this site")
    if request.user.is_authenticated:
        return redirect("studies:list")
    form = SignupForm(request.POST or None)
    status = 200
    if request.method == "POST":
        status = 400
        # Only a valid form counts: a typo costs nothing, each account made does.
        if form.is_valid() and not _under_limit(f"signup:addr:{client_address(request)}",
                                                int(settings.CONCORD_SIGNUP_PER_ADDRESS)):
            response = render(request, "registration/signup.html",
                              {"form": form, "too_many": True}, status=429)
            response["Retry-After"] = str(HOUR)
            return response
        if form.is_valid():
            try:
                user = researcher_signup(username=form.cleaned_data["username"],
                                         email=form.cleaned_data["email"],
                                         password=form.cleaned_data["password1"])
            except InputError as exc:
                column = exc.problems[0].column
                form.add_error(str(column) if column else None, exc.problems[0].message)
            else:
                login(request, user, backend="django.contrib.auth.backends.ModelBackend")
                return redirect("studies:list")
    return render(request, "registration/signup.html", {"form": form}, status=status)
