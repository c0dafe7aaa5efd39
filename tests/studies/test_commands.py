"""create_study from a definition file or a preset; errors name the file and field."""

import json

import pytest
from django.core.management import CommandError, call_command

from studies.models import Study

pytestmark = pytest.mark.django_db

DEFINITION = {
    "slug": "coref-fr",
    "title": "Coréférence",
    "language": "fr",
    "scale": {"preset": "likert-0-7-coref"},
    "instructions": "Lisez *attentivement*.",
    "design": {"items_per_participant": 20, "annotators_per_item": 3, "duplicates": 3,
               "duplicate_min_gap": 5, "seed": 11},
    "analysis": {"level": "ordinal", "trust_variant": "notebook", "simple_threshold": 3},
}

TOML = """
slug = "custom-3"
title = "Three-point"

[scale]
values = [1, 2, 3]
labels = { 1 = "bad", 2 = "fine", 3 = "good" }
display = "text"
reductions = { binary = { 1 = 0, 2 = 1, 3 = 1 } }

[design]
annotators_per_item = 2
"""


def test_it_creates_a_study_from_a_json_definition(alice, tmp_path):
    path = tmp_path / "study.json"
    path.write_text(json.dumps(DEFINITION))
    call_command("create_study", "--definition", str(path), "--owner", "alice")
    study = Study.objects.get(slug="coref-fr")
    assert study.language == "fr" and study.display == "coref"
    (question,) = study.question_list
    assert question.key == "rating" and question.values == list(range(8))
    assert [r["name"] for r in question.reductions] == ["reduced", "gravity", "importance"]
    assert question.labels["7"] == "aucune erreur"
    assert (study.items_per_participant, study.duplicates_per_participant, study.seed) == (20, 3, 11)
    assert study.analysis_settings["trust_variant"] == "notebook"


def test_it_creates_a_custom_scale_from_toml(alice, tmp_path):
    path = tmp_path / "study.toml"
    path.write_text(TOML)
    call_command("create_study", "--definition", str(path), "--owner", "alice")
    scale = Study.objects.get(slug="custom-3").primary_question
    assert scale.values == [1, 2, 3]
    assert scale.reductions == [{"name": "binary", "map": {"1": 0, "2": 1, "3": 1}}]


def test_it_creates_a_study_from_a_preset(alice):
    call_command("create_study", "sim", "--preset", "similarity-1-5", "--owner", "alice")
    study = Study.objects.get(slug="sim")
    assert study.display == "pair"
    assert study.primary_question.reduction_maps()["reduced"]["1"] == -1


def test_it_names_every_bad_field_and_creates_nothing(alice, tmp_path):
    bad = dict(DEFINITION, colour="red", scale={"preset": "nope"}, design={"duplicate_min_gap": 1},
               analysis={"level": "fancy"})
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(CommandError) as caught:
        call_command("create_study", "--definition", str(path), "--owner", "alice")
    text = str(caught.value)
    for fragment in ("unknown key 'colour'", "unknown scale preset 'nope'", "duplicate_min_gap must be",
                     "analysis.level: must be one of", "bad.json"):
        assert fragment in text
    assert not Study.objects.exists()


def test_it_reports_the_line_of_invalid_json(alice, tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{\n  "slug": "x",\n  "title": \n}')
    with pytest.raises(CommandError, match=r"broken.json:4: column 1: invalid JSON"):
        call_command("create_study", "--definition", str(path), "--owner", "alice")


def test_it_refuses_a_duplicate_slug(alice):
    call_command("create_study", "dup", "--preset", "similarity-1-5", "--owner", "alice")
    with pytest.raises(CommandError, match="this slug is taken; choose another"):
        call_command("create_study", "dup", "--preset", "similarity-1-5", "--owner", "alice")


def test_it_refuses_another_researchers_slug_without_revealing_the_study(alice, bob, tmp_path):
    call_command("create_study", "coref-fr", "--preset", "similarity-1-5", "--owner", "bob")
    path = tmp_path / "study.json"
    path.write_text(json.dumps(DEFINITION))
    with pytest.raises(CommandError) as caught:
        call_command("create_study", "--definition", str(path), "--owner", "alice")
    text = str(caught.value)
    assert "slug: this slug is taken; choose another" in text
    assert "exists" not in text.lower() and "Study with this" not in text
    assert Study.objects.get().owner == bob


def test_create_researcher_makes_a_non_staff_account(tmp_path, django_user_model):
    secret = tmp_path / "pw"
    secret.write_text("a-long-enough-passphrase-42\n")
    call_command("create_researcher", "erin", "--email", "erin@example.org",
                 "--password-file", str(secret))
    erin = django_user_model.objects.get(username="erin")
    assert not erin.is_staff and not erin.is_superuser and erin.email == "erin@example.org"
    assert erin.check_password("a-long-enough-passphrase-42")
    with pytest.raises(CommandError, match="already exists"):
        call_command("create_researcher", "erin", "--generate")


def test_create_researcher_refuses_a_weak_password(tmp_path, django_user_model):
    weak = tmp_path / "pw"
    weak.write_text("123\n")
    with pytest.raises(CommandError, match="too weak"):
        call_command("create_researcher", "weak", "--password-file", str(weak))
    assert not django_user_model.objects.filter(username="weak").exists()
