"""The items pages: a paged, searchable list (htmx or plain links), one item, edit and delete
while the study is a draft."""

import pytest

from studies.models import Item, StudyEvent
from studies.selectors import PAGE_SIZE
from tests.answers import store

pytestmark = pytest.mark.django_db

MANY = "id,text\n" + "".join(f"n{k:03d},Passage number {k}\n" for k in range(PAGE_SIZE + 7))


def test_the_list_is_paged_and_searchable_without_javascript(alice_client, alice, make_study):
    make_study(alice, items=MANY, open=False)
    first = alice_client.get("/studies/s1/items/")
    assert first.status_code == 200
    assert first.content.count(b"data-item=") == PAGE_SIZE
    assert b'href="?page=2"' in first.content and b'hx-push-url="true"' in first.content
    assert b"htmx-2.min" in first.content and b"includeIndicatorStyles" in first.content
    second = alice_client.get("/studies/s1/items/?page=2")
    assert second.content.count(b"data-item=") == 7 and b"n056" in second.content
    found = alice_client.get("/studies/s1/items/?q=number 42")
    assert found.content.count(b"data-item=") == 1 and b"n042" in found.content
    # Hostile or odd input is a page, never an error.
    for query in ("?page=abc", "?page=999", "?q=%00%27--", "?q=" + "x" * 5000):
        assert alice_client.get("/studies/s1/items/" + query).status_code == 200, query


def test_an_htmx_request_gets_only_the_results(alice_client, alice, make_study):
    make_study(alice, items=MANY, open=False)
    partial = alice_client.get("/studies/s1/items/?page=2", headers={"HX-Request": "true"})
    assert partial.status_code == 200 and b"<html" not in partial.content
    assert partial.content.count(b"data-item=") == 7 and "HX-Request" in partial["Vary"]
    restore = alice_client.get("/studies/s1/items/?page=2", headers={
        "HX-Request": "true", "HX-History-Restore-Request": "true"})
    assert b"<html" in restore.content


def test_the_list_counts_assignments_and_answers(alice_client, alice, make_study):
    from studies.services import participants_invite

    study = make_study(alice)
    participant = participants_invite(study=study, count=1)[0]
    assignment = participant.assignments.get(position=0)
    store(participant, assignment.item, 3, assignment=assignment, position=0)
    page = alice_client.get("/studies/s1/items/").content.decode()
    row = page[page.index(f'data-item="{assignment.item_id}"'):]
    row = row[:row.index("</tr>")]
    assert '<td class="num">1</td><td class="num">1</td>' in row


def test_an_item_is_shown_edited_and_deleted_while_draft(alice_client, alice, make_study):
    study = make_study(alice, open=False)
    item = study.items.get(external_id="i2")
    page = alice_client.get(f"/studies/s1/items/{item.pk}/")
    assert page.status_code == 200 and b"Second passage" in page.content and b"Edit" in page.content
    saved = alice_client.post(f"/studies/s1/items/{item.pk}/edit/",
                              {"text": "Second passage, edited", "is_control": "on"})
    assert saved.status_code == 302
    item.refresh_from_db()
    assert item.text == "Second passage, edited" and item.is_control
    event = StudyEvent.objects.get(action="item_edit")
    assert event.detail == {"item": "i2", "fields": ["is_control", "text"]}
    assert "edited" not in str(event.detail)  # never the text itself
    empty = alice_client.post(f"/studies/s1/items/{item.pk}/edit/", {"text": "  "})
    assert empty.status_code == 400
    confirm = alice_client.get(f"/studies/s1/items/{item.pk}/delete/")
    assert confirm.status_code == 200 and b'value="delete"' in confirm.content
    assert alice_client.post(f"/studies/s1/items/{item.pk}/delete/").status_code == 400
    assert Item.objects.filter(pk=item.pk).exists()
    assert alice_client.post(f"/studies/s1/items/{item.pk}/delete/",
                             {"confirm": "delete"}).status_code == 302
    assert not Item.objects.filter(pk=item.pk).exists()
    assert StudyEvent.objects.filter(action="item_delete", detail__item="i2").exists()


def test_a_pair_edit_scores_the_pair_again(alice_client, alice, make_study):
    study = make_study(alice, preset="similarity-1-5", open=False,
                       items="id,text_a,text_b\np1,A cat sat.,A cat sat.\np2,Rain.,Sun.\n")
    item = study.items.get(external_id="p1")
    assert item.metrics["chrf"] == pytest.approx(1.0)
    alice_client.post(f"/studies/s1/items/{item.pk}/edit/",
                      {"text_a": "A cat sat.", "text_b": "Dogs bark loudly at night."})
    item.refresh_from_db()
    assert item.text_b == "Dogs bark loudly at night." and item.metrics["chrf"] < 0.5


def test_items_of_an_open_study_or_with_answers_do_not_change(alice_client, alice, make_study):
    study = make_study(alice)
    item = study.items.get(external_id="i1")
    page = alice_client.get(f"/studies/s1/items/{item.pk}/")
    assert b"/edit/" not in page.content
    refused = alice_client.post(f"/studies/s1/items/{item.pk}/edit/", {"text": "changed"})
    assert refused.status_code == 400 and b"only be edited while the study is a draft" in \
        refused.content
    assert alice_client.post(f"/studies/s1/items/{item.pk}/delete/",
                             {"confirm": "delete"}).status_code == 400
    item.refresh_from_db()
    assert item.text == "First passage"
    other = make_study(alice, slug="s2", open=False)
    assert alice_client.get(f"/studies/s2/items/{item.pk}/").status_code == 404  # another study's
    del other


def test_the_lists_count_current_answers_and_the_last_activity(alice, make_study):
    import uuid

    from annotation.services import response_submit
    from studies.selectors import item_list, participant_list
    from studies.services import participants_invite

    study = make_study(alice)
    first, second = participants_invite(study=study, count=2)
    key = study.primary_question.key
    for participant in (first, second):
        response_submit(participant=participant, position=0, answers={key: {"value": 3}},
                        client_id=uuid.uuid4(), active_ms=900)
    item = first.assignments.get(position=0).item
    # A revision is a new current answer, not a second one.
    response_submit(participant=first, position=0, answers={key: {"value": 5}},
                    client_id=uuid.uuid4(), active_ms=900)
    counts = {i.pk: (i.n_assigned, i.n_answers) for i in item_list(study=study)}
    answered = {p.assignments.get(position=0).item_id for p in (first, second)}
    assert sum(n for _, n in counts.values()) == 2
    assert all(counts[pk][1] >= 1 for pk in answered) and counts[item.pk][0] >= 1
    last = {p.pk: p.last_answer for p in participant_list(study=study)}
    newest = first.responses.order_by("-received_at").first().received_at
    assert last[first.pk] == newest and last[second.pk] is not None
