"""Security: inert item HTML, per-annotator and per-researcher isolation, CSRF, every route."""

import re
import uuid

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from annotation.models import Response
from studies.services import participants_invite
from tests.answers import store


def finished_run(study):
    """A finished analysis run of ``study`` (no worker: executed in place)."""
    from analysis.services import analysis_run_create, analysis_run_execute

    run = analysis_run_execute(run_id=analysis_run_create(study=study, enqueue=False).pk)
    assert run.status == "done", run.error
    return run

pytestmark = pytest.mark.django_db

HOSTILE = (
    'id,text\n'
    'x1,"<script>alert(1)</script>Hello"\n'
    'x2,"<img src=x onerror=alert(2)>Pic"\n'
    'x3,"<a href=""javascript:alert(3)"">click</a> <b>bold</b>"\n'
    'x4,"<svg onload=alert(4)><style>body{display:none}</style>"\n'
)


def walk(resolver=None, prefix=""):
    """Yield (route, name, pattern) for every URL pattern of the project."""
    resolver = resolver or get_resolver()
    for entry in resolver.url_patterns:
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            yield from walk(entry, route)
        elif isinstance(entry, URLPattern):
            yield route, entry.name, entry


def concrete(route: str, **values) -> str:
    """Fill a route's parameters (path converters and regex groups) with the given values."""
    route = route.replace("^", "").replace("$", "").replace("\\Z", "").replace("\\.", ".")
    route = re.sub(r"\(\?P<format>[^)]*\)", "", route)
    route = re.sub(r"\(\?P<(\w+)>[^)]*\)", lambda m: str(values.get(m.group(1), "x")), route)
    route = re.sub(r"<(?:\w+:)?(\w+)>", lambda m: str(values.get(m.group(1), "x")), route)
    return "/" + route.replace("//", "/")


def test_it_shows_hostile_item_text_inert(alice, make_study, client):
    study = make_study(alice, slug="xss", items=HOSTILE)
    participant = participants_invite(study=study, count=1)[0]
    participant.consented_at = participant.created_at
    participant.save()
    seen = b""
    for position in range(participant.n_assigned):
        page = client.get(f"/a/{participant.token}/next/")
        assert page.status_code == 200
        seen += page.content
        assignment = participant.assignments.get(position=position)
        store(participant, assignment.item, 1, presentation=1, position=position,
              assignment=assignment)
    body = seen.decode()
    assert "<script>alert" not in body and "onerror" not in body and "javascript:" not in body
    assert "onload" not in body and "<style>" not in body and "<svg" not in body
    assert "<b>bold</b>" in body  # harmless formatting survives
    assert "Hello" in body and "Pic" in body


def test_it_sends_a_strict_content_security_policy(alice, make_study, client):
    study = make_study(alice)
    participant = participants_invite(study=study, count=1)[0]
    policy = client.get(f"/a/{participant.token}/")["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy
    assert "object-src 'none'" in policy


def test_an_annotator_cannot_write_another_annotators_answers(alice, make_study):
    study = make_study(alice)
    a, b = participants_invite(study=study, count=2)
    for p in (a, b):
        p.consented_at = p.created_at
        p.save()
    client = Client(enforce_csrf_checks=False)
    # A's link can only address A's own positions; B's answers are untouched.
    response = client.post(f"/a/{a.token}/answer/", {"position": 0, "value": 4,
                                                     "client_id": str(uuid.uuid4())})
    assert response.status_code == 302
    assert Response.objects.filter(participant=a).count() == 1
    assert Response.objects.filter(participant=b).count() == 0
    # A client id of B's answer, replayed through A's link, cannot touch B's row.
    client.post(f"/a/{b.token}/answer/", {"position": 0, "value": 2, "client_id": str(uuid.UUID(int=7))})
    replay = client.post(f"/a/{a.token}/answer/", {"position": 1, "value": 6,
                                                   "client_id": str(uuid.UUID(int=7))})
    assert replay.status_code == 409
    assert Response.objects.get(participant=b).answers.get().value == 2


def test_an_annotator_cannot_read_the_researcher_pages_or_api(alice, make_study, client):
    study = make_study(alice)
    participant = participants_invite(study=study, count=1)[0]
    client.get(f"/a/{participant.token}/")
    assert client.get(f"/studies/{study.slug}/").status_code == 302  # to the login page
    assert client.get(f"/api/studies/{study.slug}/responses/").status_code == 401  # with WWW-Authenticate: Bearer


def test_a_revoked_link_answers_410(participant, client):
    from studies.services import participant_revoke

    participant_revoke(participant=participant)
    assert client.get(f"/a/{participant.token}/").status_code == 410


ANNOTATOR_ROUTES = {"annotation:consent", "annotation:instructions", "annotation:next",
                    "annotation:item", "annotation:answer", "annotation:done", "annotation:join"}
PUBLIC_ROUTES = {"login", "logout", "password_reset", "password_reset_done",
                 "password_reset_confirm", "password_reset_complete", "signup", None}
# How each statistic is computed, and the references: documentation of no study, for any
# researcher signed in (a run's method page is a study route, walked with the others).
DOCUMENTATION_ROUTES = {"method", "references"}


def test_another_researcher_gets_404_on_every_route_of_a_study(alice, bob, make_study, client):
    """Walk every URL pattern: a new route without an owner rule makes this test fail."""
    study = make_study(alice, slug="private")
    participant = participants_invite(study=study, count=1)[0]
    run = finished_run(study)  # a real run: its method pages must 404 for bob too
    client.force_login(bob)
    checked = 0
    for route, name, pattern in walk():
        full = f"{pattern.lookup_str}"
        if route.startswith("admin/"):
            continue
        if name in PUBLIC_ROUTES | DOCUMENTATION_ROUTES or (name or "").startswith(
                "annotation:") or any(
            name == r.split(":")[-1] for r in ANNOTATOR_ROUTES):
            continue
        params = set(re.findall(r"<(?:\w+:)?(\w+)>", route)) | set(re.findall(r"\(\?P<(\w+)>", route))
        params.discard("format")
        if not params:
            continue
        url = concrete(route, slug="private", study_slug="private", pk=participant.pk,
                       action="open", item_pk=study.items.first().pk, run_id=run.pk,
                       name="alpha")
        # 405 (method not allowed) is decided before any lookup, so it reveals nothing; the
        # method the route serves must answer 404.
        statuses = {method: getattr(client, method)(url).status_code for method in ("get", "post")}
        assert set(statuses.values()) <= {404, 405}, f"{url} ({full}) gave {statuses}"
        assert 404 in statuses.values(), f"{url} ({full}) gave {statuses}"
        checked += 1
    assert checked >= 10, checked


def test_every_route_is_classified(alice):
    """Every named route is a researcher route (role-scoped), an account route (the caller's own
    tokens: tests/tokens), an annotator route or public."""
    for route, name, _ in walk():
        if route.startswith("admin/"):
            continue
        researcher = route.startswith(("studies/", "api/", "account/"))
        if name in DOCUMENTATION_ROUTES:
            assert route.startswith("methods/"), route
            continue
        assert researcher or name in PUBLIC_ROUTES or name in {r.split(":")[1] for r in ANNOTATOR_ROUTES}, route


def test_it_rejects_posts_without_a_csrf_token(alice, make_study):
    study = make_study(alice, open=False)
    participant = participants_invite(study=study, count=1)[0]
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    for url in (f"/studies/{study.slug}/open/", f"/studies/{study.slug}/invite/",
                f"/a/{participant.token}/answer/", f"/a/{participant.token}/"):
        assert client.post(url, {"position": 0, "value": 1}).status_code == 403, url
    anonymous = Client(enforce_csrf_checks=True)
    assert anonymous.post("/accounts/login/", {"username": "alice"}).status_code == 403


@pytest.fixture
def roles(alice, bob, django_user_model, make_study):
    """alice owns the study, bob edits it, charlie views it, dave has no role."""
    from studies.models import Membership

    study = make_study(alice, slug="shared")
    charlie = django_user_model.objects.create_user("charlie", "c@example.org", "charlie-pw-1")
    dave = django_user_model.objects.create_user("dave", "d@example.org", "dave-pw-1")
    Membership.objects.create(study=study, user=bob, role="editor")
    Membership.objects.create(study=study, user=charlie, role="viewer")
    return study, {"alice": alice, "bob": bob, "charlie": charlie, "dave": dave}


def study_routes(study, participant, run_id="x"):
    """Every researcher route of one study, filled in: (url, name)."""
    for route, name, _ in walk():
        if route.startswith("admin/") or name in PUBLIC_ROUTES or any(
                name == r.split(":")[-1] for r in ANNOTATOR_ROUTES):
            continue
        params = set(re.findall(r"<(?:\w+:)?(\w+)>", route)) | set(re.findall(r"\(\?P<(\w+)>", route))
        params.discard("format")
        if params & {"slug", "study_slug"}:
            yield concrete(route, slug=study.slug, study_slug=study.slug, pk=participant.pk,
                           action="open", item_pk=study.items.first().pk, run_id=run_id,
                           name="alpha"), name


def test_every_route_checks_the_role(roles):
    """Walk every route of a shared study with each persona, superusers included.

    dave (no role) and a superuser without a role get 404 on everything; charlie (viewer)
    never gets a 2xx/3xx from a POST; bob (editor) is never refused a POST for his role.
    """
    study, people = roles
    participant = participants_invite(study=study, count=1)[0]
    admin = type(people["alice"]).objects.create_superuser("root", "r@example.org", "root-pw-1")
    clients = {}
    for name, user in [*people.items(), ("root", admin)]:
        clients[name] = Client()
        clients[name].force_login(user)
    checked, refused, owner_only_seen = 0, [], set()
    run = finished_run(study)
    for url, name in study_routes(study, participant, run_id=run.pk):
        for stranger in ("dave", "root"):
            statuses = {m: getattr(clients[stranger], m)(url).status_code for m in ("get", "post")}
            assert set(statuses.values()) <= {404, 405}, (stranger, url, statuses)
        viewer_post = clients["charlie"].post(url).status_code
        assert viewer_post in {403, 404, 405} or (name in VIEWER_POSTS and viewer_post == 400), (
            url, viewer_post)
        editor_post = clients["bob"].post(url).status_code
        viewer_get = clients["charlie"].get(url).status_code
        assert viewer_get != 404 or editor_post in {404, 405}, (url, viewer_get)
        if viewer_post == 403:  # a write a viewer may not make: an editor may (or it is owner-only)
            refused.append(name)
            assert editor_post != 403 or name in OWNER_ONLY, (url, editor_post)
        if name in OWNER_ONLY:  # an editor is refused whichever method the route serves
            assert 403 in {editor_post, clients["bob"].get(url).status_code}, (url, name)
            owner_only_seen.add(name)
        checked += 1
    assert owner_only_seen == OWNER_ONLY, OWNER_ONLY - owner_only_seen
    assert checked >= 15, checked
    assert {"items_upload", "open", "invite", "run_start", "responses_import", "pause", "close",
            "archive", "unarchive", "delete", "item_edit", "item_delete",
            "participant_revoke", "participant_exclude", "participant_include",
            "participant_delete", "settings", "clone", "study-clone"} <= set(refused)
    # The pseudonym mapping (real ids) is a read an editor may make and a viewer may not.
    mapping = f"/studies/{study.slug}/participants/pseudonyms.csv"
    assert clients["charlie"].get(mapping).status_code == 403
    assert clients["bob"].get(mapping).status_code == 200


# Writes a viewer may make: starting an export job (a viewer may download every export); an
# empty POST is a 400 naming the missing field.
VIEWER_POSTS: set[str] = {"exports-api-list"}

# Deleting a study, and sharing it (the page, a role change, a removal; the members API).
OWNER_ONLY: set[str] = {"delete", "study-delete-study", "sharing", "member_role", "member_remove",
                        "member_invite", "member-list", "member-detail", "member-remove",
                        "member-invite"}


def test_the_method_pages_need_a_login_and_name_only_known_methods(alice, client):
    for url in ("/methods/alpha/", "/methods/references/"):
        response = client.get(url)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"], url
    client.force_login(alice)
    assert client.get("/methods/alpha/").status_code == 200
    # only the names of docs/statistics are pages: no other file, no path
    for name in ("nope", "..", "..%2F..%2Fsettings", "%2E%2E", "references.md", "alpha.md",
                 "ALPHA"):
        assert client.get(f"/methods/{name}/").status_code == 404, name
    assert client.get("/methods/../config/settings.py").status_code == 404


@pytest.mark.parametrize("changes", [
    {},
    {"_csp_replace": {"frame-ancestors": ["'self'", "https://www.mturk.com"]}},
    {"_csp_update": {"img-src": ["https://example.org"]}},
    {"_csp_exempt": True},
])
@pytest.mark.parametrize("path", ["/a/x/answer/", "/static/app.css"])
def test_the_kept_csp_header_is_django_csps_own(changes, path, settings):
    from csp.middleware import CSPMiddleware as Original
    from django.http import HttpResponse
    from django.test import RequestFactory

    from config.middleware import CSPMiddleware

    settings.CONTENT_SECURITY_POLICY = {**settings.CONTENT_SECURITY_POLICY,
                                        "EXCLUDE_URL_PREFIXES": ["/static/"]}
    settings.CONTENT_SECURITY_POLICY_REPORT_ONLY = {"DIRECTIVES": {"default-src": ["'none'"]}}
    headers = []
    for middleware in (Original, CSPMiddleware, CSPMiddleware):  # built, then kept
        request = RequestFactory().post(path)
        response = HttpResponse()
        response.__dict__.update(changes)
        instance = middleware(lambda r: HttpResponse())  # only its hooks are called
        instance.process_request(request)
        instance.process_response(request, response)
        headers.append((response.get("Content-Security-Policy"),
                        response.get("Content-Security-Policy-Report-Only")))
    assert headers[0] == headers[1] == headers[2]
    assert (headers[0][0] is None) == (path.startswith("/static/") or "_csp_exempt" in changes)
