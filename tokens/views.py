"""The researcher's token page: create (shown once), list, revoke (confirmed)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from studies.selectors import study_get

from .forms import TokenCreateForm
from .selectors import token_list
from .services import token_create, token_revoke


class AuthenticatedHttpRequest(HttpRequest):
    """A request that `login_required` let through: its user is a real account."""

    user: User


@login_required
@never_cache
@require_http_methods(["GET", "POST"])
def token_index(request: AuthenticatedHttpRequest) -> HttpResponse:
    """List the user's tokens; a valid POST creates one and shows its key on this response only."""
    form = TokenCreateForm(request.POST or None, user=request.user)
    key = None
    if request.method == "POST" and form.is_valid():
        slug = form.cleaned_data["study"]
        _, key = token_create(user=request.user, name=form.cleaned_data["name"],
                              days=form.cleaned_data["days"],
                              scope=form.cleaned_data["scope"] or "read",
                              study=study_get(user=request.user, slug=slug) if slug else None)
        form = TokenCreateForm(user=request.user)
    return render(request, "tokens/index.html",
                  {"form": form, "key": key, "tokens": token_list(user=request.user)},
                  status=400 if request.method == "POST" and key is None else 200)


@login_required
@require_http_methods(["GET", "POST"])
def token_revoke_view(request: AuthenticatedHttpRequest, token_id: int) -> HttpResponse:
    """Confirm, then revoke one of the user's tokens (someone else's is a 404)."""
    token = token_list(user=request.user).filter(pk=token_id, revoked_at__isnull=True).first()
    if token is None:
        raise Http404("No such token")
    if request.method == "POST":
        token_revoke(user=request.user, token_id=token.pk)
        messages.success(request, f"Token “{token.name}” revoked: it no longer opens the API.")
        return redirect("tokens:index")
    return render(request, "tokens/revoke.html", {"token": token})
