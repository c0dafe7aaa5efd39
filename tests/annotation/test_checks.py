"""Attention checks: placed among the main items, never flagged, final; warn, then stop."""

import pytest

from analysis.selectors import full_document, study_questions
from annotation.services import AnswerRejected
from core.design import checks_place
from studies.services import participants_invite
from tests.answers import submit

pytestmark = pytest.mark.django_db

CHECKED_CSV = (
    "id,text,role,gold:{q},tolerance:{q},check_at\n"
    "m1,Main one,main,,,\n"
    "m2,Main two,main,,,\n"
    "m3,Main three,main,,,\n"
    "m4,Main four,main,,,\n"
    "c1,For this one choose 2.,check,2,0,2\n"
    "c2,Passage two,check,6,1,4\n"
    "c3,Passage three,check,5,1,\n"
)


@pytest.fixture
def checked(make_study, alice):
    probe = make_study(alice, slug="probe", items="", open=False)
    return make_study(alice, slug="checked",
                      items=CHECKED_CSV.format(q=probe.primary_question.key))


def _invite(study):
    participant = participants_invite(study=study, count=1)[0]
    participant.refresh_from_db()
    return participant


def _roles(participant):
    return list(participant.assignments.order_by("position")
                .values_list("item__external_id", flat=True))


def test_checks_sit_at_their_chosen_places_and_a_random_one_somewhere(checked):
    participant = _invite(checked)
    order = _roles(participant)
    assert len(order) == 7 and sorted(order) == ["c1", "c2", "c3", "m1", "m2", "m3", "m4"]
    mains_before = {c: sum(o.startswith("m") for o in order[:order.index(c)])
                    for c in ("c1", "c2")}
    assert mains_before == {"c1": 1, "c2": 3}
    assert sorted(participant.check_positions) == sorted(order.index(c)
                                                         for c in ("c1", "c2", "c3"))


def test_checks_place_is_seeded_and_keeps_the_main_order():
    plan = [(10, 1), (11, 1), (12, 1), (10, 2)]
    full, positions = checks_place(plan, [(90, None), (91, 1), (92, 99)], seed=5)
    again = checks_place(plan, [(90, None), (91, 1), (92, 99)], seed=5)
    assert (full, positions) == again
    assert [f for f in full if f[0] < 90] == plan
    assert full[0] == (91, 1) and full[-1] == (92, 1)
    assert sorted(full[p][0] for p in positions) == [90, 91, 92]


def _answer_all(participant, check_value):
    """Answer in order: checks with ``check_value``, main items with 4; stop when refused."""
    results = []
    for position in range(participant.n_assigned):
        value = check_value if position in participant.check_positions else 4
        try:
            results.append(submit(participant, position, value))
        except AnswerRejected as exc:
            results.append(exc)
            break
    return results


def test_right_checks_count_and_nothing_stops(checked):
    participant = _invite(checked)
    key = checked.primary_question.key
    for position in range(participant.n_assigned):
        item = participant.assignments.get(position=position).item
        submit(participant, position, item.gold.get(key, 4))
    participant.refresh_from_db()
    assert (participant.checks_answered, participant.checks_failed) == (3, 0)
    assert participant.stopped_at is None and participant.completed_at is not None


def test_the_second_failure_stops_the_participant(checked, client):
    participant = _invite(checked)
    results = _answer_all(participant, 0)  # 0 fails every check
    participant.refresh_from_db()
    assert participant.checks_failed == 2 and participant.stopped_at is not None
    assert isinstance(results[-1], AnswerRejected) and "ended" in str(results[-1])
    assert participant.completed_at is None
    client.post(f"/a/{participant.token}/")  # consent
    page = client.get(f"/a/{participant.token}/next/")
    assert "the study ends here for you" in page.content.decode()
    assert checked.completion_code not in page.content.decode()


def test_the_first_failure_is_warned_once_on_the_next_page(checked, client):
    participant = _invite(checked)
    client.post(f"/a/{participant.token}/", follow=False)
    first_check = min(participant.check_positions)
    for position in range(first_check + 1):
        value = 0 if position == first_check else 4
        submit(participant, position, value)
    warned = client.get(f"/a/{participant.token}/next/").content.decode()
    again = client.get(f"/a/{participant.token}/next/").content.decode()
    assert "did not match what the item asked for" in warned
    assert "did not match what the item asked for" not in again


def test_the_item_page_does_not_reveal_a_check(checked, client):
    participant = _invite(checked)
    client.post(f"/a/{participant.token}/", follow=False)
    pages = []
    for position in range(participant.n_assigned):
        pages.append(client.get(f"/a/{participant.token}/next/").content.decode())
        submit(participant, position, participant.assignments.get(position=position).item
               .gold.get(checked.primary_question.key, 4))
    instructed = next(p for p in participant.check_positions
                      if participant.assignments.get(position=p).item.external_id == "c1")
    check_page = pages[instructed]
    main_page = pages[next(p for p in range(7) if p not in participant.check_positions)]
    lowered = check_page.lower()
    for word in ("gold", "attention", "screening", "tolerance", "check_at", "data-role"):
        assert word not in lowered
    # "check" appears as often as on a main item's page (checkboxes, nothing about the item).
    assert lowered.count("check") == main_page.lower().count("check")
    assert "choose 2" in lowered  # the instruction is in the item's own text


def test_check_answers_are_final_and_outside_the_main_statistics(checked):
    participant = _invite(checked)
    first_check = min(participant.check_positions)
    for position in range(first_check + 1):
        submit(participant, position, 4)
    participant.refresh_from_db()
    failed = participant.checks_failed
    changed = submit(participant, first_check, 2)  # going back: stored, never rescored
    assert changed.revision == 2
    participant.refresh_from_db()
    assert (participant.checks_answered, participant.checks_failed) == (1, failed)
    data = study_questions(study=checked)[0].data
    assert data.item_ids == ["m1", "m2", "m3", "m4"]
    assert all(data.item_ids[i].startswith("m") for i in data.item.tolist())


def test_the_results_report_each_annotators_check_accuracy(checked):
    from analysis.services import analysis_run_create, analysis_run_execute

    key = checked.primary_question.key
    careful, careless = _invite(checked), _invite(checked)
    for participant, wrong in ((careful, False), (careless, True)):
        for position in range(participant.n_assigned):
            item = participant.assignments.get(position=position).item
            value = (0 if wrong else item.gold[key]) if item.gold else 3 + position % 3
            try:
                submit(participant, position, value)
            except AnswerRejected:
                break
    run = analysis_run_execute(run_id=analysis_run_create(study=checked, enqueue=False).pk)
    checks = {r["annotator"]: r for r in run.results["attention_checks"]}
    careful.refresh_from_db()
    careless.refresh_from_db()
    assert checks[careful.pseudonym] == {"annotator": careful.pseudonym, "answered": 3,
                                         "failed": 0, "accuracy": 1.0, "stopped": False}
    assert checks[careless.pseudonym]["failed"] == 2
    assert checks[careless.pseudonym]["accuracy"] == 0.0 and checks[careless.pseudonym]["stopped"]
    assert full_document(document=run.results)["items"] == ["m1", "m2", "m3", "m4"]


def test_the_items_export_imports_back_with_roles_known_answers_and_places(checked, make_study,
                                                                           alice):
    import csv
    import io

    from exports.selectors import item_columns, item_rows
    from studies.services import items_import

    header = item_columns(study=checked)
    key = checked.primary_question.key
    assert {"role", f"gold:{key}", f"tolerance:{key}", "check_at"} <= set(header)
    out = io.StringIO()
    writer = csv.DictWriter(out, header)
    writer.writeheader()
    writer.writerows({k: ("" if v is None else v) for k, v in row.items()}
                     for row in item_rows(study=checked, header=header))
    copy = make_study(alice, slug="copy", items="", open=False)
    items_import(study=copy, data=out.getvalue().encode(), filename="items.csv")
    fields = ("external_id", "role", "gold", "tolerance", "check_at")
    assert list(copy.items.order_by("position").values_list(*fields)) == list(
        checked.items.order_by("position").values_list(*fields))


def _run_careful_and_careless(checked, overrides=None):
    from analysis.services import analysis_run_create, analysis_run_execute

    key = checked.primary_question.key
    careful, careless = _invite(checked), _invite(checked)
    for participant, wrong in ((careful, False), (careless, True)):
        for position in range(participant.n_assigned):
            item = participant.assignments.get(position=position).item
            value = (0 if wrong else item.gold[key]) if item.gold else 3 + position % 3
            try:
                submit(participant, position, value)
            except AnswerRejected:
                break
    run = analysis_run_execute(run_id=analysis_run_create(study=checked, enqueue=False,
                                                          overrides=overrides).pk)
    careful.refresh_from_db()
    careless.refresh_from_db()
    return run.results, careful.pseudonym, careless.pseudonym


def test_the_attention_rule_flags_the_annotator_who_failed_the_checks(checked):
    results, careful, careless = _run_careful_and_careless(checked)
    rule = {r["annotator"]: r for r in results["quality"] if r["rule"] == "attention"}
    assert rule[careless]["flagged"] and rule[careless]["value"] == 2
    assert rule[careless]["question"] is None
    assert rule[careless]["detail"] == {"n_checks": 2, "failures": 2, "accuracy": 0.0}
    assert not rule[careful]["flagged"] and rule[careful]["detail"]["accuracy"] == 1.0
    assert results["settings"]["quality"]["attention"] == {"max_failures": 2}


def test_the_attention_rules_threshold_is_a_setting_recorded_in_the_results(checked):
    results, _, careless = _run_careful_and_careless(
        checked, {"quality": {"attention": {"max_failures": 3}}})
    rule = {r["annotator"]: r for r in results["quality"] if r["rule"] == "attention"}
    assert rule[careless]["value"] == 2 and not rule[careless]["flagged"]
    assert rule[careless]["threshold"] == 3
    assert results["settings"]["quality"]["attention"] == {"max_failures": 3}


def test_the_dashboard_and_the_annotators_page_show_the_attention_flag(checked, client, alice):
    import re

    results, careful, careless = _run_careful_and_careless(checked)
    client.force_login(alice)
    page = client.get(f"/studies/{checked.slug}/results/").content.decode()
    ranking = page[page.index('id="quality"'):]
    ranking = ranking[:ranking.index("</section>")]
    assert "Attention checks" in ranking
    rows = {re.search(r">(A\d+)</a>", r).group(1): r for r in ranking.split("<tr")
            if re.search(r">(A\d+)</a>", r)}
    assert '<span class="badge warn">Attention checks</span>' in rows[careless]
    assert "Attention checks" not in rows[careful].replace('title="', "")
    mine = client.get(f"/studies/{checked.slug}/results/annotators/{careless}/").content.decode()
    rules = mine[mine.index('id="rules-table"'):]
    rules = rules[:rules.index("</table>")]
    attention = next(r for r in rules.split("<tr") if ">Attention checks</th>" in r)
    assert attention.startswith(' class="flagged"') and "accuracy 0" in attention


def _revisit(client, participant, position):
    return client.get(f"/a/{participant.token}/item/{position}/").content.decode()


def test_going_back_to_a_check_looks_like_going_back_to_any_item(checked, client):
    import json
    import re
    import uuid

    participant = _invite(checked)
    client.post(f"/a/{participant.token}/", follow=False)
    key = checked.primary_question.key
    for position in range(participant.n_assigned - 1):
        submit(participant, position,
               participant.assignments.get(position=position).item.gold.get(key, 3))
    check = min(participant.check_positions)
    main = next(p for p in range(1, participant.n_assigned - 1)
                if p not in participant.check_positions)
    pages = {role: _revisit(client, participant, p) for role, p in (("check", check),
                                                                      ("main", main))}
    for page in pages.values():
        assert "locked-note" not in page and 'data-locked="1"' not in page
        assert 'id="submit"' in page and "revisit-note" in page
        assert " disabled" not in page
    # The same page apart from the item's own text, number and ids.
    # (The first position has no "previous" link, whatever its item: that is not the item's.)
    shape = {role: re.sub(r'<section class="item-body".*?</section>|<a class="previous".*?</a>'
                          r'|"[^"]*\d[^"]*"|\d+| checked',
                          "", page, flags=re.S) for role, page in pages.items()}
    assert shape["check"] == shape["main"]
    # A changed answer gets the reply any revision gets, and is stored as revision 2.
    replies = {}
    for role, position in (("check", check), ("main", main)):
        body = {"position": position, "client_id": str(uuid.uuid4()),
                "answers": {checked.primary_question.key: {"value": 5}}, "active_ms": 900}
        reply = client.post(f"/a/{participant.token}/answer/", json.dumps(body),
                            content_type="application/json")
        assert reply.status_code == 200
        replies[role] = reply.json()
    assert replies["check"]["stored"] and replies["check"]["revision"] == 2
    assert set(replies["check"]) == set(replies["main"])
    assert replies["check"]["revision"] == replies["main"]["revision"]
