"""Every page of Concord passes axe-core's WCAG 2.1 A and AA rules, at 1280×800 and on a 390×844
phone, and no page scrolls sideways on the phone (issue 23, points 11 and 12).

axe-core is vendored in tests/e2e/vendor/axe-core/ (`make vendor` regenerates it from
frontend/package-lock.json): no network is needed, and no served page ever loads it. It is
evaluated in each page through the DevTools protocol, so the page keeps its strict CSP.

One browser, one set of studies: the researcher's pages (lists, study, items, participants,
sharing, settings, definition, imports, exports, tokens, history, a dashboard of each kind with a
finished analysis, an annotator's results, every method page, login, password reset, 403 and 404)
and the annotator's (consent, instructions, the item page of each display kind, screening, every
end page, the open link's consent, preview and 429 pages), each with its folded parts unfolded.
Every violation of every page is collected first, so that one run lists them all.
"""

from __future__ import annotations

import json
import os
import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone
from playwright.sync_api import expect

from studies.models import Participant, Study

from .conftest import login

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

AXE = Path(__file__).resolve().parent / "vendor" / "axe-core" / "axe.min.js"
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]
SIZES = ((1280, 800), (390, 844))

SCREENED = ("id,text,role,gold:{q},tolerance:{q}\n"
            "s1,Screening passage one.,screening,6,1\n"
            "s2,Screening passage two.,screening,1,1\n"
            "m1,Main passage one.,,,\nm2,Main passage two.,,,\n")
SYSTEMS = "id,text,system,source\n" + "".join(
    f"d{d}-{x},Output of system {x} for document {d}.,sys-{x},doc{d}\n"
    for d in range(1, 5) for x in "ABC")
# A Google Forms export: a timestamp, the e-mail address, a name and one column per item.
FORMS_EXPORT = (b"Timestamp,Email address,Your name,Rate passage i1,Rate passage i2\n"
                b"2024/03/05 09:00,zoe@example.org,Zoe,1,2\n")
RESPONSES = ("annotator,item,value\n" + "".join(
    f"r{a},i{i},{(a + i) % 8}\n" for a in range(1, 4) for i in range(1, 5))).encode()

# Wait until what a page draws after loading is drawn: every chart, and the annotator's form.
SETTLED = """() => [...document.querySelectorAll('figure.chart[data-chart-spec]')].every(
    f => ['rendered', 'error'].includes(f.dataset.chartState))
  && (!document.getElementById('answer-form')
      || document.getElementById('answer-form').dataset.ready === 'true')"""
# Open every folded part (<details>) so that what it holds is checked too, then let a frame pass
# (a box that now scrolls sideways becomes a tab stop: js/scroll-regions.js).
UNFOLD = """() => new Promise(done => {
  document.querySelectorAll('details:not([open])').forEach(d => { d.open = true; });
  requestAnimationFrame(() => requestAnimationFrame(done));
})"""
RUN_AXE = """async tags => {
  const result = await axe.run(document, {runOnly: {type: 'tag', values: tags},
                                          resultTypes: ['violations']});
  return result.violations.map(v => ({
    rule: v.id, impact: v.impact, help: v.help, count: v.nodes.length,
    nodes: v.nodes.slice(0, 4).map(n => n.target.join(' ') + '  ' + n.html.slice(0, 120))}));
}"""
WIDTH = "() => [document.scrollingElement.scrollWidth, window.innerWidth]"
# A folder to keep a screenshot of every page checked in (to look at them), or unset.
SHOTS = os.environ.get("CONCORD_A11Y_SHOTS", "")


class Audit:
    """Visit pages, run axe-core and the width check on each, and keep every finding."""

    def __init__(self, width: int) -> None:
        self.width = width
        self.source = AXE.read_text(encoding="utf-8")
        self.findings: dict[str, object] = {}
        self.pages: list[str] = []

    def check(self, page, name: str, *, status: int | None = None, response=None) -> None:
        if response is not None and status is not None:
            assert response.status == status, (name, page.url, response.status)
        page.wait_for_function(SETTLED, timeout=30_000)
        page.evaluate(UNFOLD)
        if not page.evaluate("() => typeof axe !== 'undefined'"):
            page.evaluate(self.source)
        violations = page.evaluate(RUN_AXE, TAGS)
        key = f"{name} @{self.width}"
        self.pages.append(key)
        if violations:
            self.findings[key] = violations
        if SHOTS:
            slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
            page.screenshot(path=str(Path(SHOTS) / f"{slug}-{self.width}.png"))
        if self.width < 600:
            scroll, inner = page.evaluate(WIDTH)
            if scroll > inner:
                self.findings[f"{key} scrolls sideways"] = {"scrollWidth": scroll,
                                                            "innerWidth": inner}

    def visit(self, page, name: str, url: str, *, status: int = 200) -> None:
        response = page.goto(url)
        self.check(page, name, status=status, response=response)


def _setup(live_server, django_user_model):
    """The studies every page is shown with; returns what the visits need."""
    from analysis.models import AnalysisRun
    from analysis.services import analysis_run_create, analysis_run_execute
    from demo.services import DEMO_USER, demo_seed
    from exports.services import export_job_create, export_job_execute
    from imports.services import import_job_create
    from studies.selectors import pseudonyms
    from studies.services import member_add, participants_invite
    from tests.analysis.test_questions import ITEMS, Summeval
    from tests.conftest import ITEMS_CSV, study_make
    from tokens.services import token_create

    user, _ = demo_seed()
    alice = django_user_model.objects.create_user("alice", "alice@example.org",
                                                  "alice-password-1")
    coref = Study.objects.get(slug="demo-coref")
    pair = Study.objects.get(slug="demo-similarity")
    summeval = study_make(user, slug="summeval", preset="summeval-4x5", items=ITEMS)
    Summeval(summeval)
    # Items of three systems over four sources, with system-level metric scores.
    from studies.services.scores import system_scores_import
    from tests.answers import submit

    systems = study_make(user, slug="systems", items=SYSTEMS)
    system_scores_import(study=systems, data=b"system,metric,value\nsys-A,bleu,0.3\n"
                         b"sys-B,bleu,0.5\nsys-C,bleu,0.4\n", filename="scores.csv")
    for n, annotator in enumerate(participants_invite(study=systems, count=4)):
        for position in range(annotator.n_assigned):
            submit(annotator, position=position, value=(n + position) % 8)
    for study in (coref, pair, summeval, systems):
        analysis_run_execute(run_id=analysis_run_create(study=study, enqueue=False).pk)
    member_add(study=coref, username="alice", role="viewer", user=None)
    # A colleague invited by e-mail who has not chosen a password yet (the sharing page says so).
    from studies.services.sharing import member_invite

    member_invite(study=coref, email="carol@example.org", role="editor", user=user,
                  site_url=live_server.url)
    probe = study_make(user, slug="probe", items="", open=False)
    screening = study_make(user, slug="screen",
                           items=SCREENED.format(q=probe.primary_question.key))
    plain = study_make(user, slug="plain", items=ITEMS_CSV)
    paused = study_make(user, slug="paused", items=ITEMS_CSV)
    crowd = study_make(user, slug="crowd", items=ITEMS_CSV)
    # A study whose every place is taken: its open link says it is full.
    full = study_make(user, slug="full", items=ITEMS_CSV, items_per_participant=0,
                      annotators_per_item=1)
    Participant.objects.filter(pk=participants_invite(study=full, count=1)[0].pk).update(
        consented_at=timezone.now())
    token_create(user=user, name="laptop", days=30)
    import_job = import_job_create(
        study=plain, user=user, what="responses",
        upload=SimpleUploadedFile("queued.csv", RESPONSES, content_type="text/csv"),
        options={"fmt": "long", "meta_columns": "", "annotator_column": "annotator"},
        maps={}, dry_run=True, enqueue=False)
    # A Google Forms export kept for the on-screen column mapper (issue 23, point 5).
    from imports.columns import columns_upload

    mapper_job = columns_upload(study=plain, user=user, upload=SimpleUploadedFile(
        "Form responses 1.csv", FORMS_EXPORT, content_type="text/csv"))
    done_export = export_job_create(study=coref, user=user, what="responses", fmt="csv",
                                    enqueue=False)
    export_job_execute(job_id=done_export.pk)
    queued_export = export_job_create(study=coref, user=user, what="items", fmt="csv",
                                      enqueue=False)
    run = AnalysisRun.objects.filter(study=coref, status="done").latest("pk")
    # Participants in every state the participants page marks: live quality flags, excluded,
    # screened out, stopped, revoked.
    from analysis.live import live_quality_study
    from studies.services import participant_exclude

    for study in (coref, pair):
        live_quality_study(study_id=study.pk)
    participant_exclude(study=coref, pseudonym="A2", excluded=True)
    failed, stopped, revoked = participants_invite(study=screening, count=3)
    now = timezone.now()
    Participant.objects.filter(pk=failed.pk).update(screening=Participant.Screening.FAILED,
                                                    consented_at=now)
    Participant.objects.filter(pk=stopped.pk).update(stopped_at=now, consented_at=now)
    Participant.objects.filter(pk=revoked.pk).update(revoked_at=now)
    analysis_run_create(study=plain, enqueue=False)  # its dashboard follows a queued run
    return {
        "user": DEMO_USER, "coref": coref, "pair": pair, "summeval": summeval,
        "screening": screening, "plain": plain, "systems": systems, "probe": probe,
        "paused": paused, "crowd": crowd, "full": full,
        "run": run, "import_job": import_job, "mapper_job": mapper_job,
        "done_export": done_export,
        "queued_export": queued_export, "alice": alice,
        "pseudonym": next(iter(pseudonyms(study=coref).values())),
        "participants_invite": participants_invite,
    }


def _researcher_pages(audit: Audit, page, base: str, data: dict) -> None:
    from analysis import methods

    coref, summeval, plain = data["coref"], data["summeval"], data["plain"]
    c, s, p = (f"{base}/studies/{x.slug}" for x in (coref, summeval, plain))
    item = coref.items.order_by("position").first()
    member = coref.memberships.get(user__username="alice")
    participant = coref.participants.order_by("pk").first()
    pages = [
        ("studies list", f"{base}/studies/"),
        ("new study", f"{base}/studies/new/"),
        ("new from definition", f"{base}/studies/new/definition/"),
        ("bundle import", f"{base}/studies/new/bundle/"),
        ("study page (coref)", f"{c}/"),
        ("study page (pair)", f"{base}/studies/{data['pair'].slug}/"),
        ("study page (summeval)", f"{s}/"),
        ("items", f"{c}/items/"),
        ("item", f"{c}/items/{item.pk}/"),
        ("participants", f"{c}/participants/"),
        ("participants (pair)", f"{base}/studies/{data['pair'].slug}/participants/"),
        ("participants (screening)", f"{base}/studies/{data['screening'].slug}/participants/"),
        ("participant revoke", f"{c}/participants/{participant.pk}/revoke/"),
        ("sharing", f"{c}/sharing/"),
        ("settings", f"{c}/settings/"),
        ("settings (summeval)", f"{s}/settings/"),
        ("history", f"{c}/history/"),
        ("clone", f"{c}/clone/"),
        ("delete", f"{c}/delete/"),
        ("close", f"{c}/close/"),
        ("preview", f"{c}/preview/"),
        ("responses import", f"{p}/responses/import/"),
        ("import job (queued)", f"{p}/imports/{data['import_job'].pk}/"),
        ("column mapper", f"{p}/imports/{data['mapper_job'].pk}/columns/"),
        ("dashboard (coref)", f"{c}/results/"),
        ("dashboard (pair)", f"{base}/studies/{data['pair'].slug}/results/"),
        ("dashboard (summeval)", f"{s}/results/"),
        ("dashboard (summeval, fluency)", f"{s}/results/?question=fluency"),
        ("dashboard (systems)", f"{base}/studies/systems/results/"),
        ("items (systems)", f"{base}/studies/systems/items/?system=sys-A"),
        ("system scores", f"{base}/studies/systems/system-scores/"),
        ("dashboard (run queued)", f"{p}/results/"),
        ("dashboard (no run)", f"{base}/studies/{data['screening'].slug}/results/"),
        ("annotator results", f"{c}/results/annotators/{data['pseudonym']}/"),
        ("export start", f"{c}/exports/responses.csv?background=1"),
        ("export job (done)", f"{c}/exports/jobs/{data['done_export'].pk}/"),
        ("export job (queued)", f"{c}/exports/jobs/{data['queued_export'].pk}/"),
        ("tokens", f"{base}/account/tokens/"),
        ("references", f"{base}/methods/references/"),
        ("run method (alpha)", f"{c}/results/runs/{data['run'].pk}/methods/alpha/"),
        ("admin", f"{base}/admin/"),
        ("admin users", f"{base}/admin/auth/user/"),
        ("admin tokens", f"{base}/admin/tokens/accesstoken/"),
        *((f"method {name}", f"{base}/methods/{name}/") for name in methods.METHODS),
    ]
    for name, url in pages:
        audit.visit(page, name, url)
    # Item pages that change it, and the pages of a token and a member.
    audit.visit(page, "item edit", f"{p}/items/{plain.items.order_by('position').first().pk}/edit/")
    audit.visit(page, "item delete",
                f"{p}/items/{plain.items.order_by('position').first().pk}/delete/")
    from tokens.models import AccessToken

    audit.visit(page, "token revoke",
                f"{base}/account/tokens/{AccessToken.objects.first().pk}/revoke/")
    audit.visit(page, "member remove", f"{c}/sharing/{member.pk}/remove/")
    audit.visit(page, "404", f"{base}/studies/no-such-study/", status=404)
    # The page of a database outage (config.middleware), as a person's form post gets it.
    from django.test import RequestFactory

    from config.middleware import unavailable_response

    outage = unavailable_response(RequestFactory().post("/studies/new/")).content
    page.route("**/outage/", lambda route: route.fulfill(
        status=503, body=outage, content_type="text/html; charset=utf-8"))
    audit.visit(page, "503 (database unavailable)", f"{base}/outage/", status=503)
    # A draft study's page, and an item file with problems uploaded there.
    audit.visit(page, "study page (draft)", f"{base}/studies/{data['probe'].slug}/")
    page.set_input_files("#id_file", {"name": "items.csv", "mimeType": "text/csv",
                                      "buffer": b"id,text\nx1,One\nx1,Two\n,\n"})
    with page.expect_response(lambda r: r.request.method == "POST") as posted:
        page.get_by_role("button", name="Upload items").click()
    assert posted.value.status == 400, posted.value.status
    page.wait_for_load_state()
    audit.check(page, "item file with problems")
    # An import checked in the page: its preview, then a file with problems.
    page.goto(f"{p}/responses/import/")
    page.set_input_files("#id_file", {"name": "answers.csv", "mimeType": "text/csv",
                                      "buffer": RESPONSES})
    page.check("input[name=format][value=long]")
    page.get_by_role("button", name="Check the file").click()
    expect(page.get_by_role("heading", name="Preview: answers.csv")).to_be_visible()
    audit.check(page, "import preview")
    page.goto(f"{p}/responses/import/")
    page.set_input_files("#id_file", {"name": "bad.csv", "mimeType": "text/csv",
                                      "buffer": b"annotator,item,value\nr1,nope,99\n"})
    page.check("input[name=format][value=long]")
    page.get_by_role("button", name="Check the file").click()
    page.wait_for_load_state()
    audit.check(page, "import problems")


def _viewer_pages(audit: Audit, page, base: str, data: dict) -> None:
    c = f"{base}/studies/{data['coref'].slug}"
    audit.visit(page, "study page (viewer)", f"{c}/")
    audit.visit(page, "403 (viewer importing)", f"{c}/responses/import/", status=403)


def _annotator_pages(audit: Audit, page, base: str, data: dict, settings) -> None:
    invite = data["participants_invite"]
    for kind, study in (("coref", data["coref"]), ("pair", data["pair"]),
                        ("text, four questions", data["summeval"]),
                        ("screening", data["screening"])):
        participant = invite(study=study, count=1)[0]
        audit.visit(page, f"consent ({kind})", f"{base}/a/{participant.token}/")
        page.get_by_role("button", name="I agree, continue").click()
        page.wait_for_url("**/instructions/")
        audit.check(page, f"instructions ({kind})")
        page.get_by_role("link", name="Start").click()
        page.wait_for_url("**/next/")
        audit.check(page, f"item page ({kind})")
    # A revisited item (answered, with its answers), and the end pages.
    planted = data["coref"].participants.filter(pseudonym_number__isnull=False).order_by("pk")
    audit.visit(page, "item page (revisit)", f"{base}/a/{planted[0].token}/item/0/")
    audit.visit(page, "done", f"{base}/a/{planted[0].token}/done/")
    out = invite(study=data["screening"], count=2)
    Participant.objects.filter(pk=out[0].pk).update(screening=Participant.Screening.FAILED,
                                                    consented_at=timezone.now())
    audit.visit(page, "screened out", f"{base}/a/{out[0].token}/next/")
    Participant.objects.filter(pk=out[1].pk).update(stopped_at=timezone.now(),
                                                    consented_at=timezone.now())
    audit.visit(page, "stopped", f"{base}/a/{out[1].token}/next/")
    gone = invite(study=data["plain"], count=1)[0]
    Participant.objects.filter(pk=gone.pk).update(revoked_at=timezone.now())
    audit.visit(page, "revoked (410)", f"{base}/a/{gone.token}/", status=410)
    paused = data["paused"]
    waiting, started = invite(study=paused, count=2)
    Participant.objects.filter(pk=started.pk).update(consented_at=timezone.now()
                                                     - timedelta(minutes=5))
    Study.objects.filter(pk=paused.pk).update(status=Study.Status.PAUSED)
    audit.visit(page, "closed (409)", f"{base}/a/{waiting.token}/", status=409)
    audit.visit(page, "saved (paused)", f"{base}/a/{started.token}/instructions/")
    Study.objects.filter(pk=paused.pk).update(status=Study.Status.OPEN)
    # The open link: its consent page, an MTurk preview, a platform participant's other
    # browser, and the limit of newcomers a minute (429).
    crowd = data["crowd"]
    join = f"{base}/join/{crowd.open_token}/"
    audit.visit(page, "join consent", join)
    audit.visit(page, "study full (409)", f"{base}/join/{data['full'].open_token}/", status=409)
    audit.visit(page, "mturk preview", f"{join}?workerId=W1&assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE"
                "&hitId=H1")
    page.goto(f"{join}?PROLIFIC_PID=p-axe-{audit.width}&STUDY_ID=s&SESSION_ID=x")
    page.get_by_role("button", name="I agree, continue").click()
    page.wait_for_url("**/instructions/**")
    taken = Participant.objects.get(study=crowd, external_id=f"p-axe-{audit.width}")
    page.context.clear_cookies()
    audit.visit(page, "taken (403)", f"{base}/a/{taken.token}/", status=403)
    settings.CONCORD_JOIN_RATE_PER_ADDRESS = 1
    try:
        for _ in range(2):
            page.context.clear_cookies()
            page.goto(join)
            with page.expect_response(lambda r: r.request.method == "POST"
                                      and "/join/" in r.url) as posted:
                page.get_by_role("button", name="I agree, continue").click()
            if posted.value.status == 429:
                break
        assert posted.value.status == 429
        page.wait_for_load_state()
        audit.check(page, "too many newcomers (429)")
    finally:
        settings.CONCORD_JOIN_RATE_PER_ADDRESS = 10


def _account_pages(audit: Audit, page, base: str, data: dict, settings) -> None:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.tokens import default_token_generator
    from django.utils.encoding import force_bytes
    from django.utils.http import urlsafe_base64_encode

    page.context.clear_cookies()
    audit.visit(page, "login", f"{base}/accounts/login/")
    page.fill("#id_username", "nobody")
    page.fill("#id_password", "wrong-password")
    page.click("button[type=submit]")
    page.wait_for_load_state()
    audit.check(page, "login (refused)")
    audit.visit(page, "password reset", f"{base}/accounts/password-reset/")
    page.fill("#id_email", "alice@example.org")
    page.click("button[type=submit]")
    page.wait_for_url("**/sent/")
    audit.check(page, "password reset sent")
    alice = get_user_model().objects.get(username="alice")
    uid = urlsafe_base64_encode(force_bytes(alice.pk))
    audit.visit(page, "password reset confirm",
                f"{base}/accounts/reset/{uid}/{default_token_generator.make_token(alice)}/")
    audit.visit(page, "password reset (bad link)", f"{base}/accounts/reset/{uid}/bad-token/")
    audit.visit(page, "password reset complete", f"{base}/accounts/reset/done/")
    # Open sign-up: the log-in page links it; the form, then the form with its problems.
    settings.CONCORD_OPEN_SIGNUP = True
    audit.visit(page, "login (open sign-up)", f"{base}/accounts/login/")
    audit.visit(page, "sign-up", f"{base}/accounts/signup/")
    page.fill("#id_username", "alice")
    page.fill("#id_email", "dave@example.org")
    page.fill("#id_password1", "short")
    page.fill("#id_password2", "other")
    with page.expect_response(lambda r: r.request.method == "POST") as posted:
        page.click("button[type=submit]")
    assert posted.value.status == 400, posted.value.status
    page.wait_for_load_state()
    audit.check(page, "sign-up (problems)")
    settings.CONCORD_OPEN_SIGNUP = False
    settings.CONCORD_PASSWORD_RESET_PER_ADDRESS = 1
    try:
        for _ in range(2):
            page.goto(f"{base}/accounts/password-reset/")
            page.fill("#id_email", "bob@example.org")
            with page.expect_response(lambda r: r.request.method == "POST"
                                      and "/password-reset/" in r.url) as posted:
                page.click("button[type=submit]")
        assert posted.value.status == 429
        page.wait_for_load_state()
        audit.check(page, "password reset (429)")
    finally:
        settings.CONCORD_PASSWORD_RESET_PER_ADDRESS = 10


def test_every_page_passes_axe_core_and_fits_its_width(live_server, sized, django_user_model,
                                                      settings):
    from demo.services import DEMO_PASSWORD, DEMO_USER

    assert AXE.exists(), "the vendored axe-core is missing: make vendor"
    data = _setup(live_server, django_user_model)
    base = live_server.url
    findings: dict[str, object] = {}
    for size in SIZES:
        audit = Audit(size[0])
        researcher = sized(*size)
        login(researcher, base, DEMO_USER, DEMO_PASSWORD)
        _researcher_pages(audit, researcher, base, data)
        viewer = sized(*size)
        login(viewer, base, "alice", "alice-password-1")
        _viewer_pages(audit, viewer, base, data)
        _annotator_pages(audit, sized(*size), base, data, settings)
        _account_pages(audit, sized(*size), base, data, settings)
        assert len(audit.pages) >= 70, audit.pages
        findings |= audit.findings
    assert not findings, json.dumps(findings, indent=1, ensure_ascii=False)


def test_a_box_that_scrolls_sideways_is_a_tab_stop_only_when_it_scrolls(live_server, sized,
                                                                        alice):
    """On a phone the trust page's code blocks are wider than the screen: Tab reaches one and the
    arrow key scrolls it. At 1280 px the same blocks fit, and are no tab stop; a window narrowed
    and widened again gains the tab stops and loses them."""
    phone = sized(390, 844)
    login(phone, live_server.url, "alice", "alice-password-1")
    phone.goto(f"{live_server.url}/methods/trust/")
    boxes = phone.locator(".doc pre[data-scroll-region]")
    expect(boxes.first).to_have_attribute("tabindex", "0")
    first = boxes.first
    for _ in range(200):  # tab through the page's links until the first box has the focus
        phone.keyboard.press("Tab")
        if first.evaluate("box => document.activeElement === box"):
            break
    assert first.evaluate("box => document.activeElement === box")
    assert first.evaluate("box => box.scrollLeft") == 0
    phone.keyboard.press("ArrowRight")
    phone.wait_for_function("box => box.scrollLeft > 0", arg=first.element_handle())
    wide = sized(1280, 800)
    login(wide, live_server.url, "alice", "alice-password-1")
    wide.goto(f"{live_server.url}/methods/trust/")
    wide.wait_for_load_state()
    assert wide.locator(".doc pre").count() >= 1
    fits = """() => [...document.querySelectorAll('.doc pre')].every(
        b => b.scrollWidth > b.clientWidth + 1 || !b.hasAttribute('tabindex'))"""
    assert wide.evaluate(fits)
    # The window narrowed to a phone's width: the blocks that now scroll become tab stops; widened
    # again, none is left.
    wide.set_viewport_size({"width": 390, "height": 844})
    expect(wide.locator(".doc pre[data-scroll-region]").first).to_have_attribute("tabindex", "0")
    wide.set_viewport_size({"width": 1280, "height": 800})
    expect(wide.locator(".doc [data-scroll-region]")).to_have_count(0)
    assert wide.evaluate(fits)
