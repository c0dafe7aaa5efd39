"""The settings page's question forms take the comparative kinds (docs/comparisons.md): a kind
select, the options of the kind, the scale's fields ignored for a comparison, errors at the
field; the items page builds a design and lists the comparisons with their outputs."""

from __future__ import annotations

import re

import pytest

from studies.models import StudyEvent
from studies.services import comparisons_generate
from tests.studies.test_comparisons_design import PAIRWISE, make, outputs_csv
from tests.studies.test_question_forms import page_data

pytestmark = pytest.mark.django_db


def settings_url(study):
    return f"/studies/{study.slug}/settings/"


def test_a_question_form_turns_a_scale_into_a_pairwise_question(alice, client):
    study = make(alice, [{"key": "q", "scale": "likert-1-5"}])
    client.force_login(alice)
    page = client.get(settings_url(study)).content.decode()
    assert 'name="q-0-kind"' in page and '<option value="pairwise">' in page
    assert 'data-kinds="pairwise ranking bws"' in page and "js/question-kind." in page
    data = page_data(client, settings_url(study))
    # The scale's fields still hold the old scale (and a bad custom one): not read.
    data.update({"q-0-kind": "pairwise", "q-0-ties": "on", "q-0-values": "x, y",
                 "q-0-scale": "custom", "q-0-size": "99"})
    reply = client.post(settings_url(study), data)
    assert reply.status_code == 302, (reply.context["form"].errors, reply.context["form"].formset.errors, reply.context.get("error"))
    study.__dict__.pop("question_list", None)
    question = study.primary_question
    assert (question.kind, question.comparison, question.values, question.labels) == \
        ("pairwise", {"ties": True, "strength": False}, [], {})
    # Shown again as it is: the kind selected, the option ticked; saving again changes nothing.
    page = client.get(settings_url(study)).content.decode()
    assert '<option value="pairwise" selected>' in page
    assert re.search(r'<input type="checkbox" name="q-0-ties"[^>]* checked>', page)
    events = StudyEvent.objects.filter(study=study, action="settings").count()
    assert client.post(settings_url(study), page_data(client, settings_url(study))
                       ).status_code == 302
    assert StudyEvent.objects.filter(study=study, action="settings").count() == events


def test_a_new_best_worst_question_with_a_bad_size_is_refused_at_its_field(alice, client):
    study = make(alice, [{"key": "q", "scale": "likert-1-5"}])
    client.force_login(alice)
    data = page_data(client, settings_url(study))
    data.update({"q-1-key": "bw", "q-1-kind": "bws", "q-1-size": "12"})
    reply = client.post(settings_url(study), data)
    assert reply.status_code == 400
    errors = reply.context["form"].formset.forms[1].errors
    assert "size" in errors and "8" in errors["size"][0]
    data["q-1-size"] = "5"
    assert client.post(settings_url(study), data).status_code == 302
    study.__dict__.pop("question_list", None)
    assert [(q.key, q.kind, q.comparison) for q in study.question_list] == [
        ("q", "scale", {}), ("bw", "bws", {"size": 5})]


def test_a_scale_question_still_needs_a_scale(alice, client):
    study = make(alice, [{"key": "q", "scale": "likert-1-5"}])
    client.force_login(alice)
    data = page_data(client, settings_url(study))
    data.update({"q-1-key": "new", "q-1-kind": "scale", "q-1-scale": ""})
    reply = client.post(settings_url(study), data)
    assert reply.status_code == 400
    assert "scale" in reply.context["form"].formset.forms[1].errors


def items_url(study):
    return f"/studies/{study.slug}/items/"


def test_the_items_page_builds_pairs_and_lists_them_with_their_outputs(alice, client):
    study = make(alice, PAIRWISE, items=outputs_csv())
    client.force_login(alice)
    page = client.get(items_url(study)).content.decode()
    assert 'id="comparisons-form"' in page and "Build comparisons" in page
    reply = client.post(f"/studies/{study.slug}/comparisons/",
                        {"kind": "pairs", "per_pair": "1", "size": "4", "seed": "4"})
    assert reply.status_code == 302
    assert study.items.exclude(outputs=[]).count() == 12
    page = client.get(items_url(study)).content.decode()
    assert "cmp-s1-1" in page and "s1-A" in page
    assert 'id="comparisons-summary"' in page and "12 comparisons" in page
    # Again: the page asks before replacing them.
    again = client.post(f"/studies/{study.slug}/comparisons/",
                        {"kind": "tuples", "size": "3", "seed": "4"})
    assert again.status_code == 200 and "replace" in again.content.decode()
    assert study.items.exclude(outputs=[]).count() == 12
    done = client.post(f"/studies/{study.slug}/comparisons/",
                       {"kind": "tuples", "size": "3", "seed": "4", "replace": "1"})
    assert done.status_code == 302
    assert study.items.exclude(outputs=[]).count() == 16  # 2 × 4 outputs for each source


def test_the_items_page_says_why_a_design_cannot_be_built(alice, client):
    study = make(alice, PAIRWISE, items="id,text\na,One\n")
    client.force_login(alice)
    reply = client.post(f"/studies/{study.slug}/comparisons/", {"kind": "pairs", "seed": "0",
                                                                "per_pair": "1", "size": "4"})
    assert reply.status_code == 400
    assert "items with a system" in reply.content.decode()
    comparisons_generate  # noqa: B018 (the service the page calls)


def test_a_reader_cannot_build_comparisons(alice, bob, client):
    study = make(alice, PAIRWISE, items=outputs_csv())
    client.force_login(bob)
    reply = client.post(f"/studies/{study.slug}/comparisons/", {"kind": "pairs"})
    assert reply.status_code in (403, 404)
    assert not study.items.exclude(outputs=[]).exists()


def test_a_comparisons_page_links_its_outputs(alice, client):
    study = make(alice, PAIRWISE, items=outputs_csv(sources=("s1",)))
    comparisons_generate(study=study, user=alice, seed=2)
    comparison = study.items.get(external_id="cmp-s1-1")
    client.force_login(alice)
    page = client.get(f"/studies/{study.slug}/items/{comparison.pk}/").content.decode()
    first = study.items.get(external_id=comparison.outputs[0])
    assert f'/studies/{study.slug}/items/{first.pk}/"><code>{first.external_id}</code>' in page
    assert f"({first.system})" in page and "pair, seed 2" in page
