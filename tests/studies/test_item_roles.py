"""Researchers see each item's role, known answers and tolerance, and the attention-check policy,
in the API and on the items pages; annotators never do."""

from __future__ import annotations

import pytest

from studies.models import Study
from tests.studies.test_api_writes import api_for

pytestmark = pytest.mark.django_db

ITEMS = ("id,text,role,gold:{q},tolerance:{q},check_at\n"
         "s1,Screen one,screening,6,1,\n"
         "m1,Main one,main,,,\n"
         "m2,Main two,main,,,\n"
         "c1,For this one choose 2.,check,2,0,1\n"
         "c2,Passage two,check,5,1,\n")


@pytest.fixture
def roles_study(make_study, alice):
    probe = make_study(alice, slug="probe", items="", open=False)
    study = make_study(alice, slug="roles", items=ITEMS.format(q=probe.primary_question.key),
                       open=False)
    Study.objects.filter(pk=study.pk).update(check_warn_after=1, check_stop_after=3,
                                             screening_pass_count=1)
    study.refresh_from_db()
    return study


def test_it_gives_researchers_each_items_role_known_answer_and_tolerance(roles_study, alice):
    key = roles_study.primary_question.key
    items = {i["id"]: i for i in api_for(alice).get("/api/studies/roles/items/").json()["results"]}
    assert items["m1"]["role"] == "main" and items["m1"]["gold"] == {}
    assert items["s1"] == items["s1"] | {"role": "screening", "gold": {key: 6.0},
                                         "tolerance": {key: 1.0}, "check_at": None}
    assert items["c1"] | {} == items["c1"] | {"role": "check", "gold": {key: 2.0},
                                              "tolerance": {key: 0.0}, "check_at": 1}
    assert items["c2"]["check_at"] is None


def test_the_study_says_its_attention_check_policy_and_counts_items_by_role(roles_study, alice):
    api = api_for(alice)
    one = api.get("/api/studies/roles/").json()
    assert one["quality"] == {"screening_pass_count": 1, "check_warn_after": 1,
                              "check_stop_after": 3}
    assert one["item_roles"] == {"main": 2, "screening": 1, "check": 2, "output": 0}
    listed = {s["slug"]: s for s in api.get("/api/studies/").json()["results"]}
    assert listed["roles"]["item_roles"] == one["item_roles"]
    assert listed["probe"]["item_roles"] == {"main": 0, "screening": 0, "check": 0,
                                          "output": 0}


def test_the_study_list_counts_roles_without_a_query_per_study(roles_study, make_study, alice,
                                                                django_assert_num_queries):
    api = api_for(alice)
    api.get("/api/studies/")  # warm the token's cache, if any
    for n in range(3):
        make_study(alice, slug=f"more-{n}", open=False)
    # The token, the count, the page of studies with their role counts, their questions.
    with django_assert_num_queries(4):
        reply = api.get("/api/studies/")
    assert len(reply.json()["results"]) == 5


def test_the_schema_describes_roles_gold_and_the_policy(alice):
    import yaml

    schema = yaml.safe_load(api_for(alice).get("/api/schema/").content)
    item = schema["components"]["schemas"]["Item"]["properties"]
    assert {"role", "gold", "tolerance", "check_at"} <= set(item)
    study = schema["components"]["schemas"]["Study"]["properties"]
    assert {"quality", "item_roles"} <= set(study)
    policy = schema["components"]["schemas"]["QualityPolicy"]["properties"]
    assert {"check_warn_after", "check_stop_after"} <= set(policy)


def test_the_items_page_shows_roles_known_answers_and_the_policy(roles_study, client, alice):
    client.force_login(alice)
    key = roles_study.primary_question.key
    page = client.get("/studies/roles/items/").content.decode()
    assert 'id="item-roles"' in page
    assert "warn after 1 failed" in page and "stop after 3 failed" in page
    assert "pass mark 1 right" in page
    rows = {r.split('">')[1].split("<")[0]: r for r in page.split("<tr data-item=")[1:]
            for r in [r[r.index("<a href="):]]}
    assert "attention check" in rows["c1"] and f"{key} 2 (exact)" in rows["c1"]
    assert "place 1" in rows["c1"] and "random place" in rows["c2"]
    assert "screening" in rows["s1"] and f"{key} 6 (±1)" in rows["s1"]
    assert "badge" not in rows["m1"]


def test_the_item_page_shows_its_role_and_known_answer(roles_study, client, alice):
    client.force_login(alice)
    item = roles_study.items.get(external_id="c2")
    page = client.get(f"/studies/roles/items/{item.pk}/").content.decode()
    assert "Attention check" in page and f"{roles_study.primary_question.key} 5 (±1)" in page
    assert "random (seeded per annotator)" in page and "stop after 3 failed" in page


def test_a_study_without_checks_shows_no_roles_card(make_study, client, alice):
    make_study(alice, slug="plain", open=False)
    client.force_login(alice)
    assert 'id="item-roles"' not in client.get("/studies/plain/items/").content.decode()


def test_the_responses_api_names_each_answers_item_role(roles_study, alice):
    from studies.services import participants_invite, study_open
    from tests.answers import submit

    study_open(study=roles_study)
    participant = participants_invite(study=roles_study, count=1)[0]
    key = roles_study.primary_question.key
    submit(participant, 0, roles_study.items.get(external_id="s1").gold[key])
    reply = api_for(alice).get("/api/studies/roles/responses/").json()
    rows = reply["results"] if isinstance(reply, dict) else reply
    assert [(r["item"], r["role"]) for r in rows] == [("s1", "screening")]
