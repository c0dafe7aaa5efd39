"""The study lifecycle: draft -> open <-> paused -> closed (-> open), archive, delete; each change
confirmed on its own page and recorded with who and when."""

import pytest
from django.test import Client

from studies.models import Item, Membership, Participant, Study, StudyEvent
from studies.services import participants_invite

pytestmark = pytest.mark.django_db


def post(client, slug, action, **data):
    return client.post(f"/studies/{slug}/{action}/", {"confirm": action, **data})


def test_each_status_change_is_confirmed_then_recorded(alice_client, alice, make_study):
    study = make_study(alice, open=False)
    page = alice_client.get("/studies/s1/open/")
    assert page.status_code == 200 and b'name="confirm" value="open"' in page.content
    # A post without the confirmation page's field changes nothing.
    assert alice_client.post("/studies/s1/open/").status_code == 400
    study.refresh_from_db()
    assert study.status == "draft"
    for action, status in [("open", "open"), ("pause", "paused"), ("open", "open"),
                           ("close", "closed"), ("open", "open"), ("pause", "paused"),
                           ("close", "closed")]:
        assert post(alice_client, "s1", action).status_code == 302
        study.refresh_from_db()
        assert study.status == status, action
    events = list(StudyEvent.objects.filter(study=study).exclude(action="items").order_by("id"))
    assert [e.action for e in events] == ["open", "pause", "open", "close", "open", "pause", "close"]
    assert all(e.user == alice for e in events)
    assert events[1].detail == {"from": "open", "to": "paused"}
    history = alice_client.get("/studies/s1/history/")
    # the header, the seven changes and the upload of the study's items
    assert history.content.count(b"<tr>") == 1 + 7 + 1 and b"alice" in history.content


def test_a_change_its_status_does_not_allow_is_refused(alice_client, alice, make_study):
    study = make_study(alice, open=False)
    for action in ("pause", "close"):
        response = post(alice_client, "s1", action)
        assert response.status_code == 302
        study.refresh_from_db()
        assert study.status == "draft"
        assert "cannot be" in str(list(response.wsgi_request._messages)[0])
    assert not StudyEvent.objects.exclude(action="items").exists()


def test_the_study_page_offers_the_changes_of_its_status(alice_client, alice, make_study):
    make_study(alice)
    page = alice_client.get("/studies/s1/").content
    assert b'id="action-pause"' in page and b'id="action-close"' in page
    assert b'id="action-open"' not in page and b'id="action-archive"' not in page
    assert b'id="action-delete"' in page


def test_an_empty_draft_has_no_results_button(alice_client, alice, make_study):
    make_study(alice, open=False, items=None)
    assert b"Results</a>" not in alice_client.get("/studies/s1/").content
    make_study(alice, slug="s2")
    assert b"Results</a>" in alice_client.get("/studies/s2/").content


def test_an_archived_study_is_hidden_and_read_only(alice_client, alice, make_study):
    study = make_study(alice, open=False)
    make_study(alice, slug="s2")
    # An open study must be closed first.
    post(alice_client, "s2", "archive")
    assert Study.objects.get(slug="s2").archived_at is None
    assert post(alice_client, "s1", "archive").status_code == 302
    study.refresh_from_db()
    assert study.archived_at is not None
    listing = alice_client.get("/studies/").content
    assert b"/studies/s1/" not in listing and b"/studies/s2/" in listing
    assert b"/studies/s1/" in alice_client.get("/studies/?archived=1").content
    # Read-only: no items, no links, no status change.
    before = Item.objects.filter(study=study).count()
    alice_client.post("/studies/s1/items/", {"file": _file("id,text\nz1,Zed\n")})
    alice_client.post("/studies/s1/invite/", {"count": 2})
    post(alice_client, "s1", "open")
    study.refresh_from_db()
    assert Item.objects.filter(study=study).count() == before
    assert not Participant.objects.filter(study=study).exists() and study.status == "draft"
    assert post(alice_client, "s1", "unarchive").status_code == 302
    study.refresh_from_db()
    assert study.archived_at is None
    assert [e.action for e in StudyEvent.objects.filter(study=study).exclude(action="items")
                                   .order_by("id")] == \
        ["archive", "unarchive"]


def _file(text):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile("items.csv", text.encode(), content_type="text/csv")


def test_deleting_needs_the_typed_slug_and_the_owner(alice_client, alice, bob, make_study,
                                                     settings, tmp_path,
                                                     django_capture_on_commit_callbacks):
    settings.EXPORTS_DIR = tmp_path
    study = make_study(alice)
    (tmp_path / str(study.pk)).mkdir()
    (tmp_path / str(study.pk) / "1-s1-responses.csv").write_text("x")
    participants_invite(study=study, count=2)
    Membership.objects.create(study=study, user=bob, role="editor")
    client = Client()
    client.force_login(bob)
    assert client.get("/studies/s1/delete/").status_code == 403
    assert client.post("/studies/s1/delete/", {"confirm_slug": "s1"}).status_code == 403
    page = alice_client.post("/studies/s1/delete/", {"confirm_slug": "S1 "})
    assert page.status_code == 400 and b"type the study" in page.content
    assert Study.objects.filter(slug="s1").exists()
    with django_capture_on_commit_callbacks(execute=True):
        response = alice_client.post("/studies/s1/delete/", {"confirm_slug": "s1"})
    assert response.status_code == 302 and not (tmp_path / str(study.pk)).exists()
    assert not Study.objects.filter(slug="s1").exists()
    assert not Participant.objects.exists() and not Item.objects.exists()
    event = StudyEvent.objects.get(action="delete")
    assert (event.study, event.study_slug, event.action, event.user) == (None, "s1", "delete", alice)
    assert event.detail == {"items": 5, "participants": 2}


def test_a_viewer_sees_no_lifecycle_buttons(alice, client, django_user_model, make_study):
    study = make_study(alice)
    charlie = django_user_model.objects.create_user("charlie", "c@example.org", "pw-charlie-1")
    Membership.objects.create(study=study, user=charlie, role="viewer")
    client.force_login(charlie)
    page = client.get("/studies/s1/")
    assert page.status_code == 200 and b'id="lifecycle"' not in page.content
    assert client.get("/studies/s1/close/").status_code == 403
    assert post(client, "s1", "close").status_code == 403
