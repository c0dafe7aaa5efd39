"""The annotator's side of comparative questions (issue 25): what the item page asks about a
comparison, and the judgment checked, stored as given (Answer.choice) with its canonical value,
once per retry, as a revision, as "can't judge"; refused (400 naming the question) when it names
another output, a tie or a strength the question does not allow; a scale study's answer path
unchanged."""

import json
import re
import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.models import Answer, Response
from annotation.services import AnswerRejected, response_submit
from core.comparative import shown_order
from studies.models import Participant
from studies.services import participants_invite
from tests.annotation.comparisons import comparison_study
from tests.answers import submit as scale_submit

pytestmark = pytest.mark.django_db

PAIRWISE = {"key": "pref", "kind": "pairwise", "prompt": "Which answer is better?",
            "comparison": {"ties": True, "strength": True}, "allow_cant_judge": True,
            "allow_comment": True}
STRICT = {"key": "strict", "kind": "pairwise", "comparison": {}}


def invite(study):
    return participants_invite(study=study, count=1)[0]


def item_at(participant, position=0):
    return participant.assignments.select_related("item").get(position=position).item


def answer(participant, answers, position=0, client_id=None):
    return response_submit(participant=participant, position=position, answers=answers,
                           client_id=client_id or uuid.uuid4(), active_ms=900, events=[])


@pytest.fixture
def pairwise(alice):
    return invite(comparison_study(alice, questions=[PAIRWISE]))


def shown(participant, position=0):
    item = item_at(participant, position)
    return shown_order(item.outputs, f"{participant.pk}:{item.pk}"), item


def test_a_pairwise_judgment_is_stored_as_given_with_its_canonical_value(pairwise):
    order, item = shown(pairwise)
    pick = order[1]
    result = answer(pairwise, {"pref": {"choice": {"shown": order, "pick": pick,
                                                   "strength": "much"}, "comment": "close"}})
    row = Answer.objects.get()
    assert result.created and row.response.item_id == item.pk
    assert row.choice == {"shown": order, "pick": pick, "strength": "much"}
    assert row.value == float(item.outputs.index(pick)) and row.missing == ""
    assert row.comment == "close"


def test_a_retry_stores_once_and_a_revision_keeps_the_first(pairwise):
    order, item = shown(pairwise)
    client_id = uuid.uuid4()
    first = {"pref": {"choice": {"shown": order, "pick": order[0]}}}
    one = answer(pairwise, first, client_id=client_id)
    again = answer(pairwise, first, client_id=client_id)
    assert one.response_id == again.response_id and not again.created
    assert Answer.objects.count() == 1
    revised = answer(pairwise, {"pref": {"choice": {"shown": order, "pick": "tie"}}})
    assert revised.revision == 2
    rows = list(Answer.objects.order_by("response__revision")
                .values_list("response__revision", "response__is_current", "value", "choice"))
    assert rows == [
        (1, False, float(item.outputs.index(order[0])),
         {"shown": order, "pick": order[0], "strength": ""}),
        (2, True, 0.5, {"shown": order, "pick": "tie", "strength": ""})]
    assert Participant.objects.get(pk=pairwise.pk).n_answered == 1


def test_cant_judge_stores_no_value_and_no_choice(pairwise):
    answer(pairwise, {"pref": {"choice": None, "cant_judge": True}})
    row = Answer.objects.get()
    assert (row.value, row.missing) == (None, "cant_judge")
    # SQL NULL, not a JSON null: `choice IS NULL` finds it as for a scale answer.
    assert Answer.objects.filter(choice__isnull=True).count() == 1


@pytest.mark.parametrize(("raw", "message"), [
    ({"pick": "s1-gamma"}, "pref: pick: 's1-gamma' is not one of the outputs shown"),  # none
    ({"pick": "OTHER"}, "pref: pick: 'OTHER' is not one of the outputs shown"),
    ({"shown": ["s1-alpha"], "pick": "s1-alpha"}, "pref: shown must list this comparison"),
    ({"pick": "tie", "strength": "much"}, "pref: a tie has no strength"),
    ({"pick": "s1-alpha", "strength": "hugely"}, "pref: strength must be one of slightly, much"),
])
def test_a_judgment_that_cannot_be_stored_is_refused_naming_the_question(pairwise, raw, message):
    order, item = shown(pairwise)
    if raw.get("pick") == "OTHER":  # an output of the other comparison
        other = "s2-alpha" if item.source == "src1" else "s1-alpha"
        raw, message = {"pick": other}, message.replace("OTHER", other)
    with pytest.raises(AnswerRejected) as refused:
        answer(pairwise, {"pref": {"choice": {"shown": order, **raw}}})
    assert refused.value.status == 400 and str(refused.value).startswith(message)
    assert not Response.objects.exists()


def test_a_tie_or_a_strength_the_question_does_not_allow_is_refused(alice):
    participant = invite(comparison_study(alice, questions=[STRICT]))
    order, _item = shown(participant)
    for raw, message in [({"pick": "tie"}, "strict: this question allows no tie"),
                         ({"pick": order[0], "strength": "much"},
                          "strict: this question takes no strength")]:
        with pytest.raises(AnswerRejected, match=message):
            answer(participant, {"strict": {"choice": {"shown": order, **raw}}})
    with pytest.raises(AnswerRejected, match="strict: this question needs an answer"):
        answer(participant, {"strict": {"choice": None}})
    with pytest.raises(AnswerRejected, match="strict: a comparative question is answered by a "
                                              "choice, not a value"):
        answer(participant, {"strict": {"value": 1}})


def test_ranking_and_best_worst_share_one_comparison(alice):
    study = comparison_study(alice, size=4, questions=[
        {"key": "rank", "kind": "ranking", "comparison": {"ties": True}},
        {"key": "bw", "kind": "bws", "comparison": {"size": 4}}])
    participant = invite(study)
    order, item = shown(participant)
    answer(participant, {
        "rank": {"choice": {"shown": order, "order": [[order[2]], [order[0], order[3]],
                                                      [order[1]]]}},
        "bw": {"choice": {"shown": order, "best": order[3], "worst": order[0]}}})
    stored = {a.question.key: a for a in Answer.objects.select_related("question")}
    assert stored["rank"].choice["order"] == [[order[2]], [order[0], order[3]], [order[1]]]
    assert stored["rank"].value == item.outputs.index(order[2])
    assert stored["bw"].choice == {"shown": order, "best": order[3], "worst": order[0]}
    assert stored["bw"].value == item.outputs.index(order[3])
    order, _item = shown(participant, 1)
    with pytest.raises(AnswerRejected, match="bw: the best and the worst must be two different"):
        answer(participant, {"rank": {"choice": {"shown": order, "order": order}},
                             "bw": {"choice": {"shown": order, "best": order[0],
                                               "worst": order[0]}}}, position=1)
    with pytest.raises(AnswerRejected, match="rank: order must rank every output shown"):
        answer(participant, {"rank": {"choice": {"shown": order, "order": order[:3]}},
                             "bw": {"choice": {"shown": order, "best": order[0],
                                               "worst": order[1]}}}, position=1)


def test_a_mixed_study_asks_each_item_only_its_own_questions(alice):
    study = comparison_study(alice, scale=True, questions=[STRICT])
    scale_key = study.primary_question.key
    participant = invite(study)
    positions = {a.item.external_id: a.position
                 for a in participant.assignments.select_related("item")}
    assert set(positions) == {"s1-alpha", "s1-beta", "s2-alpha", "s2-beta", "cmp-src1-1",
                              "cmp-src2-1"}
    rated, compared = positions["s1-alpha"], positions["cmp-src1-1"]
    with pytest.raises(AnswerRejected, match="unknown question 'strict'"):
        answer(participant, {scale_key: {"value": 3}, "strict": {"choice": None}},
               position=rated)
    answer(participant, {scale_key: {"value": 3}}, position=rated)
    order, _item = shown(participant, compared)
    with pytest.raises(AnswerRejected, match=f"unknown question '{scale_key}'"):
        answer(participant, {scale_key: {"value": 3},
                             "strict": {"choice": {"shown": order, "pick": order[0]}}},
               position=compared)
    answer(participant, {"strict": {"choice": {"shown": order, "pick": order[0]}}},
           position=compared)
    assert sorted(Answer.objects.values_list("question__key", flat=True)) == \
        sorted([scale_key, "strict"])


def test_an_attention_check_on_a_comparison_is_scored_by_its_gold(alice):
    study = comparison_study(alice, sources=1, questions=[STRICT], check={"strict": 0})
    participant = invite(study)
    check_position = participant.check_positions[0]
    order, item = shown(participant, check_position)
    wrong = item.outputs[1]
    answer(participant, {"strict": {"choice": {"shown": order, "pick": wrong}}},
           position=check_position)
    participant.refresh_from_db()
    assert (participant.checks_answered, participant.checks_failed) == (1, 1)


def test_a_scale_studys_answer_looks_up_no_item(participant):
    with CaptureQueriesContext(connection) as queries:
        scale_submit(participant, 0, 3)
    assert not any("studies_item" in q["sql"] for q in queries.captured_queries)
    assert Answer.objects.get().choice is None


def test_a_comparative_studys_answer_looks_its_item_up_once(pairwise):
    order, _item = shown(pairwise)
    with CaptureQueriesContext(connection) as queries:
        answer(pairwise, {"pref": {"choice": {"shown": order, "pick": order[0]}}})
    assert sum("FROM studies_item" in q["sql"] for q in queries.captured_queries) == 1


# --- the page and the view ---------------------------------------------------------------------

def start(client, participant):
    client.post(f"/a/{participant.token}/")
    return client.get(f"/a/{participant.token}/next/")


def test_the_page_shows_the_outputs_in_the_participants_order_and_the_pairwise_choices(
        client, pairwise):
    page = start(client, pairwise).content.decode()
    order, item = shown(pairwise)
    assert page.index(f'data-output="{order[0]}"') < page.index(f'data-output="{order[1]}"')
    assert "Output A" in page and "Output B" in page
    assert "A is better" in page and "B is better" in page and ">Tie<" in page
    assert 'name="strength:pref" value="slightly"' in page
    # The output's text is sanitised, never raw: its <b> stays, its & is escaped.
    assert "<b>bold</b> &amp; more" in page and f"The prompt of {item.source}." in page
    assert 'name="value' not in page and "js/comparisons." in page
    assert html_attr(page, "data-shown") == order


def html_attr(page, name):
    import html as html_module
    return json.loads(html_module.unescape(re.search(f'{name}="([^"]*)"', page).group(1)))


def test_the_page_of_a_mixed_study_asks_the_scale_about_an_output(client, alice):
    study = comparison_study(alice, scale=True, questions=[STRICT])
    participant = invite(study)
    page = start(client, participant).content.decode()
    first = participant.assignments.select_related("item").get(position=0).item
    if first.outputs:
        assert 'data-kind="pairwise"' in page and "value:" not in page
    else:
        assert 'data-kind="pairwise"' not in page and 'name="value:' in page


def test_the_view_refuses_a_wrong_output_with_a_400_naming_the_question(client, pairwise):
    start(client, pairwise)
    order, _item = shown(pairwise)
    reply = client.post(f"/a/{pairwise.token}/answer/", content_type="application/json",
                        data={"position": 0, "client_id": str(uuid.uuid4()),
                              "answers": {"pref": {"choice": {"shown": order,
                                                              "pick": "nobody"}}}})
    assert reply.status_code == 400
    assert reply.json()["error"].startswith("pref: pick: 'nobody' is not one of the outputs")
    reply = client.post(f"/a/{pairwise.token}/answer/", content_type="application/json",
                        data={"position": 0, "client_id": str(uuid.uuid4()),
                              "answers": {"pref": {"choice": ["not", "a", "judgment"]}}})
    assert reply.status_code == 400 and reply.json()["error"].startswith("pref: ")


def test_a_form_post_without_script_answers_a_pairwise_question(client, pairwise):
    start(client, pairwise)
    order, item = shown(pairwise)
    reply = client.post(f"/a/{pairwise.token}/answer/", {
        "position": 0, "client_id": str(uuid.uuid4()), "shown:pref": json.dumps(order),
        "pick:pref": order[1], "strength:pref": "slightly", "comment:pref": ""})
    assert reply.status_code == 302
    row = Answer.objects.get()
    assert row.choice == {"shown": order, "pick": order[1], "strength": "slightly"}


def test_going_back_shows_the_judgment_given(client, alice):
    study = comparison_study(alice, size=4, questions=[
        {"key": "rank", "kind": "ranking", "comparison": {"ties": True}},
        {"key": "bw", "kind": "bws", "comparison": {}}, PAIRWISE | {"key": "p2"}][:2])
    participant = invite(study)
    order, _item = shown(participant)
    ranked = [[order[3]], [order[1], order[0]], [order[2]]]
    answer(participant, {"rank": {"choice": {"shown": order, "order": ranked}},
                         "bw": {"choice": {"shown": order, "best": order[3],
                                           "worst": order[2]}}})
    start(client, participant)
    page = client.get(f"/a/{participant.token}/item/0/").content.decode()
    rows = re.findall(r'<li class="rank-row" data-output="([^"]+)"[^>]*?(data-tied="1")?>', page)
    assert [name for name, _ in rows] == [order[3], order[1], order[0], order[2]]
    assert [bool(tied) for _, tied in rows] == [False, False, True, False]
    assert f'name="best:bw" value="{order[3]}" checked' in page
    assert f'name="worst:bw" value="{order[2]}" checked' in page
    assert 'data-ranked="1"' in page


def test_the_researchers_preview_shows_a_comparison_as_an_annotator_sees_it(alice_client,
                                                                            alice):
    study = comparison_study(alice, size=4, sources=1, questions=[
        {"key": "rank", "kind": "ranking", "comparison": {}},
        {"key": "bw", "kind": "bws", "comparison": {}}])
    index = list(study.items.order_by("position").values_list("external_id", flat=True)) \
        .index("cmp-src1-1")
    page = alice_client.get(f"/studies/{study.slug}/preview/?n={index}").content.decode()
    assert 'data-kind="ranking"' in page and 'data-kind="bws"' in page
    assert page.count('class="rank-row"') == 4 and page.count('name="best:bw"') == 4
    # No tie offered where the question allows none.
    assert "tie-above" not in page
    output = alice_client.get(f"/studies/{study.slug}/preview/?n=0").content.decode()
    assert 'data-kind=' not in output  # an output alone is asked nothing here


def test_a_french_study_asks_its_comparisons_in_french(client, alice):
    import html as html_module

    study = comparison_study(alice, slug="cmp-fr", open=False, size=4, questions=[
        {"key": "rank", "kind": "ranking", "comparison": {"ties": True}},
        {"key": "bw", "kind": "bws", "comparison": {"size": 4}}])
    study.language = "fr"
    study.save(update_fields=["language"])
    from studies.services import study_open
    study_open(study=study)
    page = html_module.unescape(start(client, invite(study)).content.decode())
    for text in ("Sortie A", "Classez les sorties, la meilleure en premier", "Monter",
                 "À égalité avec celle du dessus", "Garder cet ordre", "Meilleure", "Pire"):
        assert text in page, text


def test_a_form_post_without_script_ranks_by_places(client, alice):
    study = comparison_study(alice, slug="cmp-places", size=3, questions=[
        {"key": "rank", "kind": "ranking", "comparison": {"ties": True}}])
    participant = invite(study)
    page = start(client, participant).content.decode()
    order, _item = shown(participant)
    assert f'name="place:rank:{order[0]}"' in page and "<noscript>" in page
    places = {f"place:rank:{order[0]}": "2", f"place:rank:{order[1]}": "1",
              f"place:rank:{order[2]}": "2"}
    reply = client.post(f"/a/{participant.token}/answer/", {
        "position": 0, "client_id": str(uuid.uuid4()), "shown:rank": json.dumps(order),
        **places})
    assert reply.status_code == 302
    assert Answer.objects.get().choice == {"shown": order,
                                           "order": [[order[1]], [order[0], order[2]]]}
    # a place that is not a number leaves the ranking unanswered: the page says so
    participant = invite(study)
    start(client, participant)
    order, _item = shown(participant)
    reply = client.post(f"/a/{participant.token}/answer/", {
        "position": 0, "client_id": str(uuid.uuid4()), "shown:rank": json.dumps(order),
        **{f"place:rank:{name}": "x" for name in order}})
    assert reply.status_code == 400 and Answer.objects.count() == 1
