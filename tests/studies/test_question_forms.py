"""The settings page's question forms: one per question (key, prompt, scale preset or custom,
rubric, required, comment, can't judge), the JSON kept for advanced use, and the completion text,
editable once open; every change recorded with who and when."""

from __future__ import annotations

import pytest

from studies.models import Study, StudyEvent
from tests.studies.test_settings import CUSTOM, form_data

pytestmark = pytest.mark.django_db
URL = "/studies/custom/settings/"


@pytest.fixture
def custom(alice, tmp_path):
    import json

    from django.core.management import call_command

    path = tmp_path / "custom.json"
    path.write_text(json.dumps(CUSTOM))
    call_command("create_study", "--definition", str(path), "--owner", "alice")
    return Study.objects.get(slug="custom")


def page_data(client, url=URL):
    """Every enabled field as the page fills it in, the question forms included."""
    response = client.get(url)
    data = form_data(client, url)
    formset = response.context["form"].formset
    for name, value in formset.management_form.initial.items():
        data[f"{formset.prefix}-{name}"] = value
    for form in formset.forms:
        for name, field in form.fields.items():
            value = form[name].value()
            if field.disabled or value is None or value is False:
                continue
            data[form.add_prefix(name)] = value
    return data


def questions(study):
    study.__dict__.pop("question_list", None)
    return [(q.key, q.prompt, q.preset, list(q.values), dict(q.labels), q.rubric, q.required,
             q.allow_comment, q.allow_cant_judge) for q in study.question_list]


def test_it_shows_one_form_per_question_and_the_json_as_advanced(custom, client, alice):
    client.force_login(alice)
    page = client.get(URL).content.decode()
    assert 'name="q-TOTAL_FORMS" value="3"' in page  # two questions and one to add
    assert 'name="q-0-key" value="fluency"' in page and 'name="q-1-key" value="fit"' in page
    assert '<option value="likert-1-5" selected>' in page
    assert 'name="q-1-values" value="0, 1, 2"' in page
    assert "0 = no\n1 = partly\n2 = yes" in page
    assert 'id="questions-json"' in page and "Advanced: the questions as JSON" in page


def test_saving_the_page_unchanged_changes_nothing(custom, client, alice):
    client.force_login(alice)
    before = questions(custom)
    assert client.post(URL, page_data(client)).status_code == 302
    assert questions(custom) == before
    assert not StudyEvent.objects.filter(study=custom, action="settings").exists()


def test_it_edits_adds_and_removes_questions_and_records_who(custom, client, alice):
    client.force_login(alice)
    data = page_data(client)
    data.update({"q-0-prompt": "How fluent is it?", "q-0-scale": "custom",
                 "q-0-values": "1, 2, 3", "q-0-labels": "1 = poor\n3 = good",
                 "q-0-rubric": "Read it aloud.", "q-0-comment": "on"})
    data.pop("q-0-required")
    data.update({"q-1-DELETE": "on"})
    data.update({"q-2-key": "coherence", "q-2-prompt": "Coherent?", "q-2-scale": "likert-1-5",
                 "q-2-required": "on", "q-2-cant_judge": "on"})
    reply = client.post(URL, data)
    assert reply.status_code == 302, reply.content.decode()[:3000]
    custom.refresh_from_db()
    assert questions(custom) == [
        ("fluency", "How fluent is it?", "", [1, 2, 3], {"1": "poor", "3": "good"},
         "Read it aloud.", False, True, False),
        ("coherence", "Coherent?", "likert-1-5", [1, 2, 3, 4, 5],
         questions(custom)[1][4], questions(custom)[1][5], True, False, True)]
    event = StudyEvent.objects.get(study=custom, action="settings")
    assert event.user == alice and event.at is not None
    assert event.detail == {"fields": ["questions"]}


@pytest.mark.parametrize(("change", "field", "message"), [
    ({"q-1-values": "0"}, "values", "at least two values"),
    ({"q-1-values": "0, x"}, "values", "is not a number"),
    ({"q-1-labels": "7 = seven"}, "labels", "no such value on the scale: 7"),
    ({"q-1-reductions": '{"binary": {"0": 1}}'}, "reductions", "must map exactly"),
    ({"q-1-key": "Bad Key"}, "key", "lower-case letters"),
])
def test_a_bad_question_is_named_at_its_field_and_nothing_changes(custom, client, alice,
                                                                  change, field, message):
    client.force_login(alice)
    before = questions(custom)
    reply = client.post(URL, {**page_data(client), **change})
    assert reply.status_code == 400
    errors = reply.context["form"].formset.forms[1].errors
    assert any(message in e for e in errors.get(field, [])), errors
    assert questions(custom) == before


def test_two_questions_cannot_share_a_key(custom, client, alice):
    client.force_login(alice)
    reply = client.post(URL, {**page_data(client), "q-1-key": "fluency"})
    assert reply.status_code == 400
    assert "each question needs its own key" in reply.content.decode()


def test_the_json_applies_only_when_ticked_and_is_never_silently_dropped(custom, client, alice):
    import json

    client.force_login(alice)
    data = page_data(client)
    edited = json.loads(data["questions"])
    edited[0]["prompt"] = "From the JSON"
    data["questions"] = json.dumps(edited)
    refused = client.post(URL, data)
    assert refused.status_code == 400 and "tick" in refused.content.decode()
    assert client.post(URL, {**data, "questions_json": "on"}).status_code == 302
    assert questions(custom)[0][1] == "From the JSON"


def test_the_completion_text_is_editable_once_open_and_shown_at_the_end(make_study, client,
                                                                        alice):
    from studies.services import participants_invite
    from tests.answers import submit

    study = make_study(alice, slug="live", items="id,text\ni1,One\n", items_per_participant=0,
                       duplicates=0)
    client.force_login(alice)
    url = "/studies/live/settings/"
    data = page_data(client, url)
    assert not any(k.startswith("q-0-") for k in data)  # the question forms are read-only
    page = client.get(url).content.decode()
    import re

    key = re.search(r'<input[^>]*name="q-0-key"[^>]*>', page).group(0)
    assert 'value="rating"' in key and " disabled" in key
    reply = client.post(url, {**data, "completion_text": "Thanks! **Email us** if needed.",
                              "q-TOTAL_FORMS": "1", "q-INITIAL_FORMS": "1",
                              "q-0-key": "hacked", "q-0-scale": "likert-1-5"})
    assert reply.status_code == 302
    study.refresh_from_db()
    assert study.completion_text == "Thanks! **Email us** if needed."
    assert [q.key for q in study.question_list] == ["rating"]
    event = StudyEvent.objects.get(study=study, action="settings")
    assert event.user == alice and event.detail == {"fields": ["completion_text"]}
    participant = participants_invite(study=study, count=1)[0]
    submit(participant, 0, 3)
    done = client.get(f"/a/{participant.token}/done/").content.decode()
    assert "<strong>Email us</strong>" in done and 'id="completion-text"' in done


def test_the_completion_text_is_part_of_the_definition(custom):
    from studies.selectors import study_definition
    from studies.services import study_update

    study_update(study=custom, changes={"completion_text": "Bye."})
    assert study_definition(study=Study.objects.get(slug="custom"))["completion_text"] == "Bye."


def test_it_builds_at_most_twenty_question_forms_whatever_total_forms_says(custom, client, alice):
    # issue 23, point 17: TOTAL_FORMS=100000 built 1 020 forms (Django's default absolute_max)
    # in 16 s before saying no.
    from studies.forms import QuestionFormSet

    client.force_login(alice)
    data = {**page_data(client), "q-TOTAL_FORMS": "100000"}
    reply = client.post(URL, data)
    assert reply.status_code in (200, 400)
    formset = reply.context["form"].formset
    assert len(formset.forms) <= 20
    assert "at most 20" in " ".join(formset.non_form_errors())
    assert QuestionFormSet.absolute_max == 20
    study = Study.objects.get(slug="custom")
    assert [q.key for q in study.question_list] == ["fluency", "fit"]  # nothing saved
