"""View decorators of the researcher's pages: the URL's study, read once with the role checked."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Concatenate, ParamSpec, TypeVar

from django.http import HttpRequest

from .models import Study
from .selectors import Role, study_get

P = ParamSpec("P")
R = TypeVar("R")


def study_view(need: str = Role.VIEWER, *, post_need: str | None = None, slug_kwarg: str = "slug"
               ) -> Callable[[Callable[Concatenate[HttpRequest, Study, P], R]],
                             Callable[Concatenate[HttpRequest, P], R]]:
    """Call the view with the study of the URL's ``slug`` when the user's role allows ``need``.

    The rule is `study_get`'s: no role at all is a 404 (another's study behaves as if it did not
    exist), a role below ``need`` a 403; one query, and the study carries ``role``. A page that
    anyone with a role reads and only some may change names the role a POST needs in
    ``post_need`` (the settings page: a viewer reads it, an editor saves it). The view
    receives the study in place of ``slug`` (``study.slug`` is the URL's; the API's routes name
    it ``study_slug``: ``slug_kwarg``). Put it under
    ``@login_required`` and the method decorators, so that an anonymous visitor is sent to log
    in and a wrong method is a 405 before the study is read. Example::

        @login_required
        @require_POST
        @study_view(need=Role.EDITOR)
        def invite(request: HttpRequest, study: Study) -> HttpResponse: ...
    """
    def decorate(view: Callable[Concatenate[HttpRequest, Study, P], R]
                 ) -> Callable[Concatenate[HttpRequest, P], R]:
        @wraps(view)
        def wrapped(request: HttpRequest, /, *args: P.args, **kwargs: P.kwargs) -> R:
            slug = kwargs.pop(slug_kwarg)
            if not isinstance(slug, str):  # only a URL pattern calls a view: always a str
                raise TypeError("study_view needs the URL's slug")
            needed = post_need if post_need and request.method == "POST" else need
            study = study_get(user=request.user, slug=slug, need=needed)
            return view(request, study, *args, **kwargs)

        return wrapped

    return decorate
