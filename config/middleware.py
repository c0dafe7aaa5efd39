"""Our middleware: 503 with Retry-After while the database cannot be reached, the CSP header
built once per policy, the message storage built only for a request that uses it, a NUL byte in
a link refused (or taken out of a query string or cookie) before any view sees it, and no
response of a view kept in a cache.

Answer 503 with Retry-After, at once, while the database cannot be reached.

Without this, a request during a database outage waits for a connection, then ends in Django's
500 page: the annotator page's script cannot tell a passing outage from a bug, a researcher sees
"Server Error", and the log fills with tracebacks. With it, a connection-level error of the
database (`OperationalError`, `InterfaceError`; the psycopg pool's timeout is an
`OperationalError` too) becomes a 503 that says when to try again: JSON for a script or an API
client, a small page for a person. The settings keep the wait short (DATABASE_CONNECT_TIMEOUT,
DATABASE_POOL_TIMEOUT in config/settings.py).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

import csp.constants
import csp.middleware
import csp.utils
from django.conf import settings
from django.contrib.messages.middleware import MessageMiddleware as DjangoMessageMiddleware
from django.contrib.messages.storage import default_storage
from django.core.handlers.base import BaseHandler
from django.core.handlers.exception import convert_exception_to_response, response_for_exception
from django.core.signals import setting_changed
from django.db import InterfaceError, OperationalError, connections
from django.dispatch import receiver
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from django.template.loader import render_to_string
from django.utils.cache import add_never_cache_headers
from django.utils.functional import SimpleLazyObject, empty
from django.utils.module_loading import import_string

logger = logging.getLogger(__name__)

# Seconds a client should wait before trying again; the pool reconnects within about as long
# once the database is back (see DATABASE_POOL_RECONNECT_TIMEOUT in config/settings.py).
RETRY_AFTER_SECONDS = 5


class DatabaseUnavailableMiddleware:
    """Turn a database connection error raised by a view into a 503 with Retry-After."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, OperationalError | InterfaceError):
            return None
        # One line, no traceback: during an outage every request lands here.
        logger.error("database unavailable, answered 503 to %s %s: %s: %s", request.method,
                     request.path, type(exception).__name__, exception)
        _discard_broken_connections()
        return unavailable_response(request)


def unavailable_response(request: HttpRequest) -> HttpResponse:
    """Return the 503 answer: JSON for scripts and API clients, a page for a person."""
    response: HttpResponse
    if _wants_json(request):
        response = JsonResponse({"error": "The database is unavailable; try again shortly.",
                                 "retry_after": RETRY_AFTER_SECONDS}, status=503)
    else:
        # Rendered without the request: the context processors would read the session, which
        # lives in the database that just failed.
        response = HttpResponse(render_to_string("503.html", {
            "retry_after": RETRY_AFTER_SECONDS,
            # A GET is safe to repeat, so the page reloads itself; a form post is not.
            "reload": request.method in ("GET", "HEAD"),
        }), status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    add_never_cache_headers(response)
    return response


def _wants_json(request: HttpRequest) -> bool:
    if request.content_type == "application/json" or request.path_info.startswith("/api/"):
        return True
    return request.get_preferred_type(["text/html", "application/json"]) == "application/json"


def _discard_broken_connections() -> None:
    # After the database restarted or the network dropped, every idle connection of the pool is
    # dead but looks fine until used; without this, each would fail one more request after the
    # database is back. The pool's own check drops them now and reconnects in the background.
    for connection in connections.all(initialized_only=True):
        pool = getattr(connection, "pool", None)  # psycopg's pool (PostgreSQL, DATABASE_POOL)
        if pool is None:
            continue
        try:
            pool.check()
        except Exception as exc:  # the 503 must go out whatever the pool says
            logger.warning("could not check the connection pool of %r: %s", connection.alias, exc)


class CSPMiddleware(csp.middleware.CSPMiddleware):
    """django-csp's middleware, with each header value built once per policy and kept.

    django-csp builds the header from the settings on every response (dataclasses turned into
    dicts, every directive joined again): a tenth of the CPU of an answer's whole request. The
    value only depends on the settings and on the view's changes (``_csp_replace`` and the like,
    which are constant per view), so it is kept per set of changes; a response that carries a
    nonce is built fresh, as before. Same header, same exemptions (tests/test_security.py).
    """

    _built: dict[tuple[bool, str], str] = {}

    def process_response(self, request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        if getattr(request, "_csp_nonce", None) is not None or \
                (settings.DEBUG and response.status_code in (500, 404)):
            return super().process_response(request, response)
        for report_only, header, exempt, setting in (
                (False, csp.constants.HEADER, "_csp_exempt", "CONTENT_SECURITY_POLICY"),
                (True, csp.constants.HEADER_REPORT_ONLY, "_csp_exempt_ro",
                 "CONTENT_SECURITY_POLICY_REPORT_ONLY")):
            parts = self.get_policy_parts(request=request, response=response,
                                          report_only=report_only)
            key = (report_only, repr(parts))
            value = self._built.get(key)
            if value is None:
                value = csp.utils.build_policy(**asdict(parts), report_only=report_only)
                if len(self._built) < 100:  # a few views' variants; never grows without bound
                    self._built[key] = value
            prefixes = tuple((getattr(settings, setting, None) or {})
                             .get("EXCLUDE_URL_PREFIXES", None) or ())
            if value and header not in response and not getattr(response, exempt, False) \
                    and not request.path_info.startswith(prefixes):
                response[header] = value
        # As django-csp does: a nonce asked for after the header was written is an error.
        request.csp_nonce = csp.middleware.CheckableLazyObject(  # type: ignore[attr-defined]
            self._csp_nonce_post_response)
        return response


@receiver(setting_changed)
def _forget_csp(*, setting: str, **kwargs: object) -> None:
    if setting.startswith("CONTENT_SECURITY_POLICY"):
        CSPMiddleware._built.clear()


class MessageMiddleware(DjangoMessageMiddleware):
    """Django's message middleware, building a request's message storage when it is first used.

    Django builds a cookie and a session storage for every request and asks them after the
    response whether there is anything to store. No annotator request uses messages (an answer
    is a JSON reply): building them was 1–2 % of an answer's CPU (a profile of
    ``bench.answer_cost``). A storage nobody touched has read nothing, been given nothing and so
    has nothing to store: its response is left as it is, which is what Django's `update` does
    for it. Anything that touches ``request._messages`` (`messages.add_message`, the template
    context's ``messages``) builds the storage as before.
    """

    def process_request(self, request: HttpRequest) -> None:
        request._messages = SimpleLazyObject(lambda: default_storage(request))  # type: ignore[attr-defined]

    # django-stubs types every middleware's response as HttpResponse; a streamed export is an
    # HttpResponseBase, which Django's own middleware handles as well.
    def process_response(self, request: HttpRequest,  # type: ignore[override]
                         response: HttpResponseBase) -> HttpResponseBase:
        messages = getattr(request, "_messages", None)
        if isinstance(messages, SimpleLazyObject) and messages._wrapped is empty:
            return response
        return super().process_response(request, response)  # type: ignore[arg-type]


class NulRefusalMiddleware:
    """Answer 404 for a path that holds a NUL character (``%00``); take NUL characters out of the
    query string and the cookies.

    No link of the app ever holds one, but every route takes its parameters (a study's slug, a
    participant's token, an item's id, an open link's ``PROLIFIC_PID``) to the database, and
    PostgreSQL refuses a NUL in text with an error: a 500 for anyone, logged in or not
    (``/a/%00/``, ``/join/<link>/?PROLIFIC_PID=a%00``). Handled here, once, no view and no
    selector has to think of it. A query parameter keeps the rest of its text, as the items
    search always did (a page, never an error). Before WhiteNoise: a file name cannot hold one.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if "\x00" in request.path_info:
            response: HttpResponseBase
            if _wants_json(request):
                response = JsonResponse({"detail": "Not found."}, status=404)
            else:  # the site's own 404 page, as a view's Http404 gets it
                response = response_for_exception(request, Http404("a link cannot hold a NUL"))
            response["Cache-Control"] = "no-store"  # as every other answer (NoStoreMiddleware)
            return response
        _drop_nul_query(request)
        _drop_nul_cookies(request)
        return self.get_response(request)


def _drop_nul_query(request: HttpRequest) -> None:
    # %00 is how a NUL arrives (a bare one never passes the server). request.GET is read from
    # META (the WSGI environ) when first used, which no middleware before this one does.
    query = request.META.get("QUERY_STRING", "")
    if "%00" not in query and "\x00" not in query:
        return
    while "%00" in query or "\x00" in query:  # "%%0000" is "%00" again once cleaned
        query = query.replace("%00", "").replace("\x00", "")
    request.META["QUERY_STRING"] = query
    request.__dict__.pop("GET", None)


def _drop_nul_cookies(request: HttpRequest) -> None:
    # A quoted cookie may spell a NUL in octal (`sessionid="abcdefgh\\000"`): the session
    # middleware would look that key up, and PostgreSQL's refusal be a 500 on every page. No
    # cookie of ours ever holds one; the request goes on as if it had not sent it.
    if "\\" not in request.META.get("HTTP_COOKIE", ""):
        return  # no escape, no NUL (a raw one never passes the server): the usual case
    for name in [name for name, value in request.COOKIES.items() if "\x00" in value]:
        del request.COOKIES[name]


class NoStoreMiddleware:
    """Send ``Cache-Control: no-store`` with every response of a view that sets none itself.

    Every page is private: a researcher's pages and API answers, or an annotator's pages, whose
    links are the annotator's credential. Neither a shared computer's browser cache nor a proxy
    may keep one (the back button after logging out, the next user of a lab machine). Static
    files never reach this middleware (WhiteNoise, before it, answers them with their own
    long-lived headers); a view that chose its own caching keeps it. One header, no session
    read: the answer path pays nothing measurable.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        if "Cache-Control" not in response:
            response["Cache-Control"] = "no-store"
        return response


class LeanAnswerMiddleware:
    """Send the page script's answers (a JSON POST to ``/a/<token>/answer/``) through only the
    middleware they need; every other request goes on through the whole list.

    An answer is the most frequent request, and a profile of it (issue 26) found a third of its
    server time in middleware it has no use for: static files (WhiteNoise), the session and the
    user (the link is the annotator's credential; the view reads neither), the browser's
    language (the view speaks the study's), APPEND_SLASH, messages, htmx and the log-in lockout
    (axes). ``settings.ANSWER_MIDDLEWARE`` lists what it keeps, in the same order as in
    ``MIDDLEWARE``: the security headers, the NUL refusal, ``no-store``, the CSRF check (the
    token and the Origin, exactly as before), X-Frame-Options, the content security policy and
    the database's 503. A form post of the answer (no script) and anything else is untouched.
    First in ``MIDDLEWARE``: nothing before it runs twice.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]):
        self.get_response = get_response
        self.lean: Callable[[HttpRequest], HttpResponseBase] | None = None

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if request.method == "POST" and request.content_type == "application/json" \
                and _ANSWER_PATH.fullmatch(request.path_info):
            if self.lean is None:
                self.lean = _LeanHandler().chain()
            return self.lean(request)
        return self.get_response(request)


_ANSWER_PATH = re.compile(r"/a/[^/]+/answer/")


class _LeanHandler(BaseHandler):
    """Django's request handling (URL resolution, view middleware, exception handling) over
    ``settings.ANSWER_MIDDLEWARE`` instead of ``settings.MIDDLEWARE`` (synchronous, as the
    app is served)."""

    def chain(self) -> Callable[[HttpRequest], HttpResponseBase]:
        self._view_middleware: list[Callable[..., Any]] = []
        self._template_response_middleware: list[Callable[..., Any]] = []
        self._exception_middleware: list[Callable[..., Any]] = []
        handler = convert_exception_to_response(self._get_response)  # type: ignore[attr-defined]
        for path in reversed(settings.ANSWER_MIDDLEWARE):
            middleware = import_string(path)(handler)
            if hasattr(middleware, "process_view"):
                self._view_middleware.insert(0, middleware.process_view)
            if hasattr(middleware, "process_template_response"):
                self._template_response_middleware.append(
                    middleware.process_template_response)
            if hasattr(middleware, "process_exception"):
                self._exception_middleware.append(middleware.process_exception)
            handler = convert_exception_to_response(middleware)
        self._middleware_chain = handler
        return handler  # type: ignore[return-value]  # synchronous: never awaitable

