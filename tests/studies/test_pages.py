"""The researcher's study pages: what another researcher's studies reveal (nothing)."""

import pytest

from studies.models import Study

pytestmark = pytest.mark.django_db


def new_study(client, slug):
    return client.post("/studies/new/", {
        "slug": slug, "title": "Mine", "preset": "likert-0-7-coref", "language": "en",
        "items_per_participant": 0, "annotators_per_item": 3, "duplicates": 0,
        "duplicate_min_gap": 5, "seed": 0, "instructions": "", "consent": ""})


def test_the_new_study_form_refuses_a_taken_slug_without_revealing_whose(alice_client, bob,
                                                                         make_study):
    make_study(bob, slug="bobs-secret", items=None, open=False)
    page = new_study(alice_client, "bobs-secret")
    html = page.content.decode()
    assert page.status_code == 200 and "this slug is taken; choose another" in html
    assert "exists" not in html and "Study with this" not in html
    assert list(Study.objects.values_list("slug", "owner__username")) == [("bobs-secret", "bob")]


def test_the_new_study_form_says_the_same_of_the_researchers_own_slug(alice_client, alice,
                                                                      make_study):
    make_study(alice, slug="mine", items=None, open=False)
    assert "this slug is taken; choose another" in new_study(alice_client, "mine").content.decode()


def test_the_new_study_form_creates_the_study(alice_client):
    page = new_study(alice_client, "fresh")
    assert page.status_code == 302 and page["Location"] == "/studies/fresh/"
