"""Wiring only: every app declares its own routes (pages and API) and is mounted the same way."""

from collections.abc import Callable
from typing import Any

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.templatetags.static import static
from django.urls import include, path
from django.utils.functional import lazy
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.permissions import IsAuthenticated

from imports import views as imports_views
from studies import views as studies_views
from studies.accounts import LoginView, ThrottledPasswordResetView, signup


def by_method(**views: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """One view of an address whose methods two apps serve: each method's own view, 405 for any
    other method."""

    def view(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.method not in views:
            return HttpResponseNotAllowed(list(views))
        return views[request.method](request, *args, **kwargs)

    return view


urlpatterns = [
    # The annotator's pages first: every answer is resolved, and each pattern tried before the
    # one that matches costs time (an include's whole list: Django collects them for its 404
    # page). No route below overlaps them.
    path("", include("annotation.urls")),
    path("", RedirectView.as_view(pattern_name="studies:list", permanent=False)),
    # Pages link their icon; browsers, feed readers and crawlers still ask for /favicon.ico.
    # Lazy: the hashed name is only known once the static files are collected.
    path("favicon.ico", RedirectView.as_view(url=lazy(static, str)("favicon.ico"),
                                             permanent=False)),
    path("accounts/login/", LoginView.as_view(), name="login"),
    # Only when CONCORD_OPEN_SIGNUP is on (else 404): anyone makes a researcher account.
    path("accounts/signup/", signup, name="signup"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    # Password reset by e-mail, with Django's own views and tokens (templates/registration/); the
    # mail is throttled per client address and per e-mail address (studies.accounts).
    path("accounts/password-reset/", ThrottledPasswordResetView.as_view(),
         name="password_reset"),
    path("accounts/password-reset/sent/", auth_views.PasswordResetDoneView.as_view(),
         name="password_reset_done"),
    path("accounts/reset/<uidb64>/<token>/", auth_views.PasswordResetConfirmView.as_view(),
         name="password_reset_confirm"),
    path("accounts/reset/done/", auth_views.PasswordResetCompleteView.as_view(),
         name="password_reset_complete"),
    # One address, two apps: a study's item list (studies) takes the upload of more items
    # (imports), which studies may not import; studies:items_upload names it.
    path("studies/<slug:slug>/items/",
         by_method(GET=studies_views.items_upload, POST=imports_views.items_upload)),
    path("", include("studies.urls")),
    path("", include("imports.urls")),
    path("", include("analysis.urls")),
    path("", include("judges.urls")),
    path("", include("exports.urls")),
    path("", include("tokens.urls")),
    # The API's map is for researchers, like the API: 401 for an anonymous client (as every API
    # route), the log-in page for a person.
    path("api/schema/", SpectacularAPIView.as_view(permission_classes=[IsAuthenticated]),
         name="schema"),
    path("api/docs/", login_required(SpectacularSwaggerSplitView.as_view(url_name="schema")),
         name="api-docs"),
    path("admin/", admin.site.urls),
]
