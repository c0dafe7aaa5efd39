"""Researchers' accounts: the password-reset mail, throttled.

Django's own reset view sends a mail for every POST: 30 mails in 0.9 s to one address, a mail
bomb run through our server. Two limits, each an hour's window in the shared cache
(`studies.ratelimit`): a client address asks at most CONCORD_PASSWORD_RESET_PER_ADDRESS times
(then a 429 page says to wait), and one e-mail address receives at most
CONCORD_PASSWORD_RESET_PER_EMAIL mails (further requests get the usual "sent" page and no mail,
so the answer still says nothing about which addresses have accounts).
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import PasswordResetForm
from django.http import HttpResponse, HttpResponseRedirect

from .ratelimit import client_address, window_count

logger = logging.getLogger(__name__)

HOUR = 3600


class ThrottledPasswordResetView(auth_views.PasswordResetView):
    """Django's PasswordResetView under the two limits above."""

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
