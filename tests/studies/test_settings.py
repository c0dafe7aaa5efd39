"""Study settings: the definition downloaded and read back, edits while draft and once open,
clones."""

import json

import pytest
from django import forms
from django.core.management import call_command

from core.problems import InputError
from studies.models import Item, Study, StudyEvent
from studies.selectors import study_definition
from studies.services import participants_invite, study_clone, study_update
from tests.answers import submit

pytestmark = pytest.mark.django_db

CUSTOM = {
    "slug": "custom", "title": "Custom", "language": "fr", "display": "pair",
    "questions": [
        {"key": "fluency", "prompt": "Fluent?", "scale": "likert-1-5", "required": True},
        {"key": "fit", "prompt": "", "rubric": "Judge the fit.", "cant_judge": True,
         "scale": {"values": [0, 1, 2], "labels": {"0": "no", "1": "partly", "2": "yes"},
                   "reductions": {"binary": {"0": 0, "1": 0, "2": 1}}}},
    ],
    "consent": "You agree.", "instructions": "Read *twice*.",
    "completion_url": "https://app.prolific.com/submissions/complete?cc=ABC",
    "show_gold": False,
    "design": {"items_per_participant": 2, "annotators_per_item": 2, "duplicates": 1,
               "duplicate_min_gap": 3, "seed": 11},
    "analysis": {"level": "interval", "seed": 5, "heuristics": {"slow": {"threshold_s": 90}}},
}


@pytest.fixture
def custom(alice, tmp_path):
    path = tmp_path / "custom.json"
    path.write_text(json.dumps(CUSTOM))
    call_command("create_study", "--definition", str(path), "--owner", "alice")
    return Study.objects.get(slug="custom")


def without_slug(definition):
    return {k: v for k, v in definition.items() if k != "slug"}


@pytest.mark.parametrize("preset", ["likert-0-7-coref", "summeval-4x5", "similarity-1-5"])
def test_the_definition_reads_back_to_an_equal_study(make_study, alice, tmp_path, preset):
    study = make_study(alice, slug="orig", preset=preset, open=False, items=None)
    study_update(study=study, changes={"instructions": "New", "analysis": {"seed": 3}})
    definition = study_definition(study=study)
    definition["slug"] = "again"
    path = tmp_path / "again.json"
    path.write_text(json.dumps(definition))
    call_command("create_study", "--definition", str(path), "--owner", "alice")
    again = Study.objects.get(slug="again")
    assert without_slug(study_definition(study=again)) == without_slug(
        study_definition(study=study))
    fields = ("key", "position", "prompt", "required", "allow_comment", "allow_cant_judge",
              "preset", "values", "labels", "rubric", "reductions")
    assert (list(again.questions.values_list(*fields))
            == list(study.questions.values_list(*fields)))


def test_a_custom_definition_round_trips(custom, tmp_path):
    definition = study_definition(study=custom)
    assert definition["questions"][0]["scale"] == "likert-1-5"  # still the preset
    assert definition["questions"][1]["scale"]["reductions"] == {
        "binary": {"0": 0, "1": 0, "2": 1}}
    assert definition["analysis"]["heuristics"]["slow"]["threshold_s"] == 90
    definition["slug"] = "custom-2"
    path = tmp_path / "c2.json"
    path.write_text(json.dumps(definition))
    call_command("create_study", "--definition", str(path), "--owner", "alice")
    assert without_slug(study_definition(study=Study.objects.get(slug="custom-2"))) == \
        without_slug(study_definition(study=custom))


def test_a_draft_changes_anything_and_records_the_fields(custom, alice):
    changed = study_update(study=custom, user=alice, changes={
        "title": "Renamed", "preset": "likert-0-7-coref", "design": {"seed": 99},
        "analysis": {"heuristics": {"slow": {"threshold_s": 120}}}})
    assert changed == ["title", "questions", "design", "analysis"]  # display: still "pair"
    custom.refresh_from_db()
    assert custom.seed == 99 and custom.items_per_participant == 2  # the rest of the design kept
    assert [q.key for q in custom.question_list] == ["rating"]
    heuristics = custom.analysis_settings["heuristics"]
    assert heuristics["slow"]["threshold_s"] == 120
    assert custom.analysis_settings["level"] == "interval"  # partial: the rest kept
    event = StudyEvent.objects.get(study=custom, action="settings")
    assert event.user == alice and event.detail == {"fields": changed}
    assert study_update(study=custom, changes={"title": "Renamed"}) == []  # nothing changed


def test_once_open_only_texts_and_analysis_change(make_study, alice):
    study = make_study(alice, slug="opened")
    assert study_update(study=study, changes={
        "title": "T", "instructions": "I", "consent": "C",
        "completion_url": "https://example.org/done", "analysis": {"seed": 9}}) == [
        "title", "consent", "instructions", "completion_url", "analysis"]
    for change in ({"preset": "similarity-1-5"}, {"design": {"seed": 4}}, {"language": "fr"},
                   {"questions": study_definition(study=study)["questions"][:0] or None}):
        with pytest.raises(InputError):
            study_update(study=study, changes=change)
    with pytest.raises(InputError, match="cannot change once the study has been opened"):
        study_update(study=study, changes={"show_gold": False})


def test_bad_changes_name_every_problem(custom):
    with pytest.raises(InputError) as caught:
        study_update(study=custom, changes={"slug": "x", "colour": "red",
                                            "analysis": {"seed": -1}})
    columns = {p.column for p in caught.value.problems}
    assert {"slug", "colour"} <= columns
    with pytest.raises(InputError) as caught:
        study_update(study=custom, changes={"completion_url": "not a url",
                                            "design": {"annotators_per_item": 0}})
    assert len(caught.value.problems) >= 1
    assert Study.objects.get(pk=custom.pk).title == "Custom"


def test_questions_with_answers_do_not_change(make_study, alice):
    study = make_study(alice, slug="answered")
    (person,) = participants_invite(study=study, count=1)
    submit(person)
    Study.objects.filter(pk=study.pk).update(status="draft")  # even as a draft
    study.refresh_from_db()
    with pytest.raises(InputError, match="answers refer to them"):
        study_update(study=study, changes={"preset": "similarity-1-5"})


def test_a_clone_has_the_settings_and_items_and_nobody(make_study, alice, bob):
    study = make_study(alice, slug="source")
    (person,) = participants_invite(study=study, count=1)
    submit(person)
    study_update(study=study, changes={"analysis": {"excluded_annotators": ["A1"]}})
    clone = study_clone(study=study, slug="source-copy", user=bob)
    assert clone.status == "draft" and clone.title == "SOURCE (copy)"
    assert clone.memberships.get().user == bob
    mine, theirs = study_definition(study=clone), study_definition(study=study)
    assert mine["analysis"]["excluded_annotators"] == []
    mine["analysis"]["excluded_annotators"] = ["A1"]
    assert without_slug(mine) == {**without_slug(theirs), "title": "SOURCE (copy)"}
    fields = ("external_id", "position", "text", "is_control", "metrics", "features", "meta")
    assert (list(Item.objects.filter(study=clone).order_by("position").values_list(*fields))
            == list(study.items.order_by("position").values_list(*fields)))
    assert not clone.participants.exists()
    with pytest.raises(InputError, match="taken"):
        study_clone(study=study, slug="source-copy", user=bob)


def form_data(client, url):
    """The settings form as the page fills it in (every enabled field)."""
    form = client.get(url).context["form"]
    data = {}
    for name, field in form.fields.items():
        if field.disabled:
            continue
        value = form[name].value()
        if isinstance(value, (list, tuple)):
            value = ", ".join(value)
        if isinstance(field, forms.TypedChoiceField) and isinstance(value, bool):
            value = str(value)  # a yes/no select posts its selected option, "False" too
        if value is None or value is False:
            continue  # an unticked box posts nothing
        data[name] = value
    return data


def test_the_settings_page_saves_a_draft(custom, client, alice):
    client.force_login(alice)
    url = "/studies/custom/settings/"
    data = form_data(client, url)
    assert client.post(url, data).status_code == 302
    assert not StudyEvent.objects.filter(study=custom, action="settings").exists()  # unchanged
    data.update({"title": "Edited", "a__heuristics__slow__threshold_s": "45", "seed": "12"})
    assert client.post(url, data).status_code == 302
    custom.refresh_from_db()
    assert custom.title == "Edited" and custom.seed == 12
    assert custom.analysis_settings["heuristics"]["slow"]["threshold_s"] == 45
    assert StudyEvent.objects.get(study=custom, action="settings").detail == {
        "fields": ["title", "design", "analysis"]}
    bad = client.post(url, {**data, "questions": "[", "a__seed": "-1"})
    assert bad.status_code == 400 and b"not valid JSON" in bad.content
    for hostile in ("[" * 100_000 + "]" * 100_000, "null", "5", '[{"key": "A!"}]'):
        assert client.post(url, {**data, "questions": hostile}).status_code == 400


def test_an_open_study_keeps_its_questions_on_the_page(make_study, client, alice):
    study = make_study(alice, slug="live")
    client.force_login(alice)
    url = "/studies/live/settings/"
    data = form_data(client, url)
    assert "questions" not in data and "seed" not in data  # disabled
    posted = {**data, "title": "Live!", "questions": "[]", "seed": "77"}
    assert client.post(url, posted).status_code == 302
    study.refresh_from_db()
    assert study.title == "Live!" and study.seed == 0 and len(study.question_list) == 1


def test_download_upload_and_clone_in_the_browser(custom, client, alice, bob):
    client.force_login(alice)
    download = client.get("/studies/custom/definition.json")
    assert download.status_code == 200 and "attachment" in download["Content-Disposition"]
    definition = json.loads(download.content)
    assert definition == study_definition(study=custom)
    definition["slug"] = "uploaded"
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("d.json", json.dumps(definition).encode())
    assert client.post("/studies/new/definition/", {"file": upload}).status_code == 302
    assert without_slug(study_definition(study=Study.objects.get(slug="uploaded"))) == \
        without_slug(study_definition(study=custom))
    broken = SimpleUploadedFile("d.json", b'{"slug": "x"}')
    refused = client.post("/studies/new/definition/", {"file": broken})
    assert refused.status_code == 400 and b"title" in refused.content
    assert client.get("/studies/custom/clone/").status_code == 200
    assert client.post("/studies/custom/clone/", {"slug": "custom"}).status_code == 400
    assert client.post("/studies/custom/clone/", {"slug": "custom-3"}).status_code == 302
    assert Study.objects.get(slug="custom-3").memberships.get().user == alice


def test_the_api_patches_downloads_and_clones(make_study, client, alice, bob):
    study = make_study(alice, slug="api-study")
    Membership = study.memberships.model
    Membership.objects.create(study=study, user=bob, role="viewer")
    client.force_login(alice)
    url = "/api/studies/api-study/"
    patched = client.patch(url, {"title": "Patched", "analysis": {"seed": 8}},
                           content_type="application/json")
    assert patched.status_code == 200 and patched.json()["title"] == "Patched"
    frozen = client.patch(url, {"design": {"seed": 3}}, content_type="application/json")
    assert frozen.status_code == 400 and "once the study has been opened" in frozen.json()["detail"]
    assert client.patch(url, ["x"], content_type="application/json").status_code == 400
    assert client.patch(url, {"title": ["a"]}, content_type="application/json").status_code == 400
    definition = client.get(f"{url}definition/").json()
    assert definition == study_definition(study=Study.objects.get(pk=study.pk))
    cloned = client.post(f"{url}clone/", {"slug": "api-copy"}, content_type="application/json")
    assert cloned.status_code == 201 and cloned.json()["slug"] == "api-copy"
    assert client.post(f"{url}clone/", {"slug": "api-copy"},
                       content_type="application/json").status_code == 400
    assert client.post(f"{url}clone/", {"slug": "Not a slug!"},
                       content_type="application/json").status_code == 400
    client.force_login(bob)  # a viewer reads the definition, changes and clones nothing
    assert client.get(f"{url}definition/").status_code == 200
    assert client.patch(url, {"title": "x"}, content_type="application/json").status_code == 403
    assert client.post(f"{url}clone/", {"slug": "bobs"},
                       content_type="application/json").status_code == 403
