"""The participants page: progress, source, last activity and flags, paged; revoke a link and
exclude an annotator from the analysis (by the pseudonym the results use), each confirmed."""

import pytest
from django.test import Client

from analysis.services import analysis_settings
from studies.models import Membership, Participant, StudyEvent
from studies.selectors import PAGE_SIZE
from studies.selectors import pseudonyms as stored_pseudonyms
from studies.services import participants_invite
from tests.answers import store

pytestmark = pytest.mark.django_db


def answered(participant, positions=(0,)):
    for position in positions:
        assignment = participant.assignments.get(position=position)
        store(participant, assignment.item, 3, assignment=assignment, position=position)
    Participant.objects.filter(pk=participant.pk).update(n_answered=len(positions))


def test_the_list_shows_progress_pseudonyms_and_flags(alice_client, alice, make_study):
    study = make_study(alice)
    a, b, c = participants_invite(study=study, count=3, label="lab")
    answered(b, (0, 1))
    answered(a)
    page = alice_client.get("/studies/s1/participants/")
    assert page.status_code == 200 and page.content.count(b"data-participant=") == 3
    names = stored_pseudonyms(study=study)
    assert (names[b.pk], names[a.pk]) == ("A1", "A2")  # order of first answer
    html = page.content.decode()
    row_b = html[html.index(f'data-participant="{b.pk}"'):]
    assert row_b[:row_b.index("</tr>")].count(">A1<") == 1 and "2/5" in row_b[:row_b.index("</tr>")]
    assert "(link made)" in html  # c has done nothing yet
    assert b"htmx-2.min" in page.content


def test_the_list_is_paged(alice_client, alice, make_study):
    study = make_study(alice)
    participants_invite(study=study, count=PAGE_SIZE + 2)
    assert alice_client.get("/studies/s1/participants/").content.count(b"data-participant=") \
        == PAGE_SIZE
    partial = alice_client.get("/studies/s1/participants/?page=2", headers={"HX-Request": "true"})
    assert partial.content.count(b"data-participant=") == 2 and b"<html" not in partial.content
    for query in ("?page=-1", "?q=%00", "?q=" + "y" * 5000):
        assert alice_client.get("/studies/s1/participants/" + query).status_code == 200, query


def test_revoking_a_link_is_confirmed_recorded_and_polite(alice_client, alice, make_study):
    study = make_study(alice)
    participant = participants_invite(study=study, count=1)[0]
    url = f"/studies/s1/participants/{participant.pk}/revoke/"
    confirm = alice_client.get(url)
    assert confirm.status_code == 200 and b'value="revoke"' in confirm.content
    assert alice_client.post(url).status_code == 400  # not from the confirmation page
    participant.refresh_from_db()
    assert participant.revoked_at is None
    assert alice_client.post(url, {"confirm": "revoke"}).status_code == 302
    participant.refresh_from_db()
    assert participant.revoked_at is not None
    assert StudyEvent.objects.get(action="revoke").detail == {"participant": participant.pk}
    page = Client().get(f"/a/{participant.token}/")
    assert page.status_code == 410 and b"withdrawn by the researcher" in page.content
    assert b"revoked" in alice_client.get("/studies/s1/participants/").content
    assert alice_client.post(url, {"confirm": "revoke"}).status_code == 400  # already


def test_excluding_writes_the_pseudonym_to_the_analysis_settings_and_undoes(alice_client, alice,
                                                                          make_study):
    study = make_study(alice)
    a, b = participants_invite(study=study, count=2)
    answered(a)
    answered(b)
    pseudonym = stored_pseudonyms(study=study)[b.pk]
    assert alice_client.post(f"/studies/s1/participants/{b.pk}/exclude/",
                             {"confirm": "exclude"}).status_code == 302
    study.refresh_from_db()
    assert analysis_settings(study=study).excluded_annotators == (pseudonym,)
    assert b"excluded" in alice_client.get("/studies/s1/participants/").content
    assert alice_client.post(f"/studies/s1/participants/{b.pk}/include/",
                             {"confirm": "include"}).status_code == 302
    study.refresh_from_db()
    assert analysis_settings(study=study).excluded_annotators == ()
    assert [(e.action, e.detail) for e in StudyEvent.objects.filter(
        action__in=["exclude", "include"]).order_by("id")] == \
        [("exclude", {"pseudonym": pseudonym}), ("include", {"pseudonym": pseudonym})]


def test_a_participant_without_answers_cannot_be_excluded(alice_client, alice, make_study):
    study = make_study(alice)
    participant = participants_invite(study=study, count=1)[0]
    page = alice_client.post(f"/studies/s1/participants/{participant.pk}/exclude/",
                             {"confirm": "exclude"})
    assert page.status_code == 400 and b"nothing to exclude" in page.content


def test_a_viewer_sees_no_platform_ids_and_changes_nothing(alice, django_user_model, make_study):
    study = make_study(alice)
    participant = participants_invite(study=study, count=1, label="secret-label")[0]
    charlie = django_user_model.objects.create_user("charlie", "c@example.org", "pw-charlie-1")
    Membership.objects.create(study=study, user=charlie, role="viewer")
    client = Client()
    client.force_login(charlie)
    page = client.get("/studies/s1/participants/")
    assert page.status_code == 200 and b"secret-label" not in page.content
    assert b"/revoke/" not in page.content
    assert client.post(f"/studies/s1/participants/{participant.pk}/revoke/",
                       {"confirm": "revoke"}).status_code == 403
