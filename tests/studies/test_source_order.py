"""The source order and the system balance of a study's assignments: in the definition file, the
settings page and the API, and in the presentations participants are given (docs/systems.md)."""

from __future__ import annotations

from collections import Counter

import pytest

from core.design import plan_presentations
from core.problems import Collector, InputError
from studies.definitions import validate_definition
from studies.models import Study
from studies.selectors import study_definition
from studies.services import (
    participants_invite,
    study_create_from_definition,
    study_design,
    study_update,
)
from tests.studies.test_settings import form_data
from tests.studies.test_systems import api_for

pytestmark = pytest.mark.django_db

GRID = "id,text,system,source\n" + "".join(
    f"d{d}-s{s},Output {s} of source {d},sys-{s},doc-{d}\n" for d in range(10) for s in range(3))


def sources_in_order(participant) -> list[str]:
    return list(participant.assignments.order_by("position").values_list("item__source",
                                                                          flat=True))


def test_the_definition_carries_the_source_order(make_study, alice):
    study = make_study(alice, slug="grid", items=GRID, open=False)
    assert study_definition(study=study)["design"]["source_order"] == "spread"
    definition = study_definition(study=study)
    definition["slug"], definition["design"]["source_order"] = "grid-two", "together"
    copy = study_create_from_definition(owner=alice, definition=validate_definition(
        definition, Collector("definition")))
    assert copy.source_order == Study.SourceOrder.TOGETHER


def test_a_bad_source_order_is_named_in_the_definition(alice):
    with pytest.raises(InputError) as caught:
        validate_definition({"slug": "x", "title": "X", "preset": "likert-0-7-coref",
                             "design": {"source_order": "mixed"}}, Collector("d.json"))
    [problem] = caught.value.problems
    assert problem.column == "design.source_order" and "spread or together" in problem.message


def test_together_gives_each_participant_the_outputs_of_a_source_in_a_row(make_study, alice):
    study = make_study(alice, slug="grid", items=GRID, open=False)
    study_update(study=study, changes={"design": {"source_order": "together"}}, user=alice)
    orders = []
    for participant in participants_invite(study=study, count=4):
        order = sources_in_order(participant)
        runs = [s for n, s in enumerate(order) if n == 0 or order[n - 1] != s]
        assert len(runs) == len(set(runs)) == 10
        orders.append(tuple(runs))
    assert len(set(orders)) == 4  # shuffled per participant


def test_spread_keeps_the_outputs_of_a_source_apart(make_study, alice):
    study = make_study(alice, slug="grid", items=GRID, open=False)
    for participant in participants_invite(study=study, count=4):
        order = sources_in_order(participant)
        assert all(a != b for a, b in zip(order, order[1:], strict=False))


def test_each_participant_sees_every_system_about_equally_often(make_study, alice):
    study = make_study(alice, slug="grid", items=GRID, open=False, items_per_participant=8,
                       annotators_per_item=2)
    for participant in participants_invite(study=study, count=6):
        systems = Counter(participant.assignments.values_list("item__system", flat=True))
        assert sorted(systems.values()) == [2, 3, 3]


def test_blank_systems_and_sources_change_no_draw_of_the_plan(make_study, alice):
    study = make_study(alice, slug="blank", open=False, items_per_participant=3,
                       items="id,text,system,source\ni1,a,,\ni2,b,,\ni3,c,,\ni4,d,,\n"
                             "i5,e,,\n")
    [participant] = participants_invite(study=study, count=1)
    ids = list(study.items.filter(role="main").values_list("id", flat=True))
    # the plan of a study without systems, drawn with the participant's recorded seed
    expected = plan_presentations(ids, design=study_design(study), seed=participant.order_seed)
    assert (list(participant.assignments.order_by("position")
                 .values_list("item_id", "presentation")) == expected)


def test_the_settings_page_offers_the_source_order(make_study, client, alice):
    make_study(alice, slug="grid", items=GRID, open=False)
    client.force_login(alice)
    url = "/studies/grid/settings/"
    page = client.get(url).content.decode()
    assert 'name="source_order"' in page and "one after the other" in page
    data = form_data(client, url)
    data["source_order"] = "together"
    assert client.post(url, data).status_code == 302
    assert Study.objects.get(slug="grid").source_order == "together"


def test_the_api_shows_and_changes_the_source_order(make_study, alice):
    make_study(alice, slug="grid", items=GRID, open=False)
    api = api_for(alice)
    assert api.get("/api/studies/grid/").json()["source_order"] == "spread"
    reply = api.patch("/api/studies/grid/", {"design": {"source_order": "together"}},
                      format="json")
    assert reply.status_code == 200 and reply.json()["source_order"] == "together"
    bad = api.patch("/api/studies/grid/", {"design": {"source_order": "zigzag"}}, format="json")
    assert bad.status_code == 400


def test_the_new_study_form_takes_the_source_order(alice_client):
    reply = alice_client.post("/studies/new/", {
        "slug": "fresh", "title": "Fresh", "preset": "likert-0-7-coref", "language": "en",
        "items_per_participant": 0, "annotators_per_item": 3, "duplicates": 0,
        "duplicate_min_gap": 5, "seed": 0, "source_order": "together"})
    assert reply.status_code == 302
    assert Study.objects.get(slug="fresh").source_order == "together"
