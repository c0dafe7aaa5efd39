"""Comparative questions on the researcher's side (docs/comparisons.md): the kinds in a
definition file, the designs built from the systems' outputs, the outputs' role, the items file's
``outputs`` column and the API's fields."""

from __future__ import annotations

import json
from collections import Counter
from itertools import combinations

import pytest

from core.problems import Collector, InputError
from studies.definitions import load_definition, validate_definition
from studies.models import Item, Participant, Question, StudyEvent
from studies.selectors import study_definition
from studies.services import (
    comparisons_generate,
    items_import,
    participant_assign,
    participants_invite,
    study_clone,
    study_create_from_definition,
    study_open,
    study_update,
)
from tests.answers import store
from tests.studies.test_api_writes import api_for

pytestmark = pytest.mark.django_db

DEFINITION = {
    "slug": "prefs", "title": "Preferences",
    "questions": [
        {"key": "fluency", "prompt": "Which is more fluent?", "kind": "pairwise",
         "options": {"ties": True, "strength": True}, "cant_judge": True, "comment": True},
        {"key": "order", "prompt": "Rank them", "kind": "ranking"},
        {"key": "best", "prompt": "Best and worst", "kind": "bws", "options": {"size": 3}},
        {"key": "quality", "prompt": "How good?", "scale": "likert-1-5"},
    ],
}


def outputs_csv(systems=("A", "B", "C", "D"), sources=("s1", "s2")) -> str:
    lines = ["id,text,system,source"]
    lines += [f"{src}-{sys},Output of {sys} for {src},{sys},{src}"
              for src in sources for sys in systems]
    return "\n".join(lines) + "\n"


def make(alice, questions, *, slug="cmp", items=None):
    definition = validate_definition({"slug": slug, "title": slug, "questions": questions},
                                     Collector("test"))
    study = study_create_from_definition(owner=alice, definition=definition)
    if items:
        items_import(study=study, data=items.encode(), filename="items.csv")
    return study


PAIRWISE = [{"key": "better", "kind": "pairwise"}]


# --- the definition file ---------------------------------------------------------------------


def test_a_definition_file_with_every_kind_reads_back_equal_and_clones(alice):
    definition = load_definition(json.dumps(DEFINITION).encode(), "prefs.json")
    study = study_create_from_definition(owner=alice, definition=definition)
    questions = {q.key: q for q in study.question_list}
    assert questions["fluency"].kind == "pairwise"
    assert questions["fluency"].comparison == {"ties": True, "strength": True}
    assert questions["order"].comparison == {"ties": False}
    assert questions["best"].comparison == {"size": 3}
    assert questions["fluency"].values == [] and questions["fluency"].labels == {}
    assert questions["quality"].kind == "scale" and questions["quality"].values == [1, 2, 3, 4, 5]
    written = study_definition(study=study)
    assert written["questions"][0] == {
        "key": "fluency", "prompt": "Which is more fluent?", "kind": "pairwise",
        "options": {"ties": True, "strength": True}, "required": True, "comment": True,
        "cant_judge": True}
    assert "kind" not in written["questions"][3]
    again = load_definition(json.dumps({**written, "slug": "prefs-2"}).encode(), "again.json")
    assert {**again, "slug": "prefs"} == load_definition(json.dumps(written).encode(), "w.json")
    clone = study_clone(study=study, slug="prefs-copy", user=alice)
    assert [(q.key, q.kind, q.comparison) for q in clone.question_list] == \
        [(q.key, q.kind, q.comparison) for q in study.question_list]
    # The same definition posted as settings changes nothing.
    assert study_update(study=study, changes={"questions": written["questions"]}) == []


def test_a_toml_definition_takes_the_kinds_too(alice):
    toml = b'''slug = "t"
title = "T"
[[questions]]
key = "better"
kind = "bws"
[questions.options]
size = 5
'''
    definition = load_definition(toml, "t.toml")
    assert definition["questions"][0]["options"] == {"size": 5}


@pytest.mark.parametrize(("question", "column", "words"), [
    ({"key": "q", "kind": "pairwise", "options": {"ties": "yes"}}, "questions[0].options.ties",
     "ties must be true or false"),
    ({"key": "q", "kind": "pairwise", "options": {"size": 4}}, "questions[0].options.size",
     "no option 'size'"),
    ({"key": "q", "kind": "bws", "options": {"size": 12}}, "questions[0].options.size",
     "size must be a whole number from 3 to 8"),
    ({"key": "q", "kind": "ranking", "options": ["ties"]}, "questions[0].options",
     "options is a table"),
    ({"key": "q", "kind": "pairwise", "scale": "likert-1-5"}, "questions[0].scale",
     "a pairwise question has no scale"),
    ({"key": "q", "scale": "likert-1-5", "options": {"ties": True}}, "questions[0].options",
     "options belong to a comparative question"),
    ({"key": "q", "kind": "triplet"}, "questions[0].kind", "kind must be one of scale"),
])
def test_a_bad_kind_or_option_is_named_with_its_field_and_line(question, column, words):
    text = json.dumps({"slug": "x", "title": "X", "questions": [question]}, indent=1)
    with pytest.raises(InputError) as raised:
        load_definition(text.encode(), "bad.json")
    problems = [(p.column, p.message, p.line) for p in raised.value.problems]
    assert any(c == column and words in m and line is not None for c, m, line in problems), \
        problems


# --- designs ---------------------------------------------------------------------------------


def comparisons(study):
    return list(study.items.exclude(outputs=[]).order_by("position"))


def test_all_pairs_compares_every_pair_of_a_sources_outputs_once(alice):
    study = make(alice, PAIRWISE, items=outputs_csv())
    assert comparisons_generate(study=study, user=alice, kind="pairs", seed=3) == 12
    built = comparisons(study)
    for source in ("s1", "s2"):
        mine = [c for c in built if c.source == source]
        pairs = Counter(frozenset(c.outputs) for c in mine)
        expected = {frozenset((f"{source}-{a}", f"{source}-{b}"))
                    for a, b in combinations("ABCD", 2)}
        assert set(pairs) == expected and set(pairs.values()) == {1}
        assert sorted(c.external_id for c in mine) == \
            sorted(f"cmp-{source}-{n}" for n in range(1, 7))
    assert all(c.system == "" and c.role == "main" and c.meta == {"design": "pairs", "seed": 3}
               for c in built)


def test_pairs_per_pair_repeats_each_pair_and_balances_its_sides(alice):
    study = make(alice, PAIRWISE, items=outputs_csv(sources=("s1",)))
    assert comparisons_generate(study=study, user=alice, kind="pairs", per_pair=2) == 12
    pairs = Counter(tuple(c.outputs) for c in comparisons(study))
    for a, b in combinations([f"s1-{x}" for x in "ABCD"], 2):
        assert pairs[(a, b)] == 1 and pairs[(b, a)] == 1  # twice, once on each side


def test_best_worst_tuples_are_balanced_and_seeded(alice):
    systems = tuple("ABCDEFGH")
    study = make(alice, [{"key": "bw", "kind": "bws"}], items=outputs_csv(systems, ("s1",)))
    assert comparisons_generate(study=study, user=alice, kind="tuples", size=4, seed=7) == 16
    built = comparisons(study)
    assert all(len(c.outputs) == 4 and len(set(c.outputs)) == 4 for c in built)
    appearances = Counter(name for c in built for name in c.outputs)
    assert set(appearances) == {f"s1-{x}" for x in systems}
    assert max(appearances.values()) - min(appearances.values()) <= 1
    first = [c.outputs for c in built]
    # The same seed builds the same design (it replaces the one before); another seed another.
    assert comparisons_generate(study=study, user=alice, kind="tuples", seed=7) == 16
    assert [c.outputs for c in comparisons(study)] == first
    assert len(comparisons(study)) == 16
    comparisons_generate(study=study, user=alice, kind="tuples", seed=8)
    assert [c.outputs for c in comparisons(study)] != first
    assert comparisons_generate(study=study, user=alice, kind="tuples", n_tuples=5) == 5


def test_the_history_records_each_design(alice):
    study = make(alice, PAIRWISE, items=outputs_csv())
    comparisons_generate(study=study, user=alice, kind="pairs", seed=5)
    event = StudyEvent.objects.filter(study=study, action="comparisons").get()
    assert event.user == alice
    assert event.detail | {} == event.detail | {"count": 12, "design": "pairs", "seed": 5,
                                                "replaced": 0}


def test_outputs_become_output_items_only_when_no_scale_question_asks_about_them(alice):
    only = make(alice, PAIRWISE, items=outputs_csv(), slug="only")
    comparisons_generate(study=only, user=alice)
    roles = Counter(only.items.values_list("role", flat=True))
    assert roles == {"main": 12, "output": 8}
    mixed = make(alice, [*PAIRWISE, {"key": "q", "scale": "likert-1-5"}], items=outputs_csv(),
                 slug="mixed")
    comparisons_generate(study=mixed, user=alice)
    assert Counter(mixed.items.values_list("role", flat=True)) == {"main": 20}
    # A scale question added later makes them main items again; removed, outputs again.
    study_update(study=only, changes={"questions": [*PAIRWISE,
                                                    {"key": "q", "scale": "likert-1-5"}]})
    assert Counter(only.items.values_list("role", flat=True)) == {"main": 20}
    study_update(study=only, changes={"questions": PAIRWISE})
    assert Counter(only.items.values_list("role", flat=True)) == {"main": 12, "output": 8}


def test_comparisons_are_assigned_and_outputs_never_are(alice):
    study = make(alice, PAIRWISE, items=outputs_csv())
    comparisons_generate(study=study, user=alice)
    study_open(study=study)
    participant = participants_invite(study=study, count=1)[0]
    participant_assign(participant=participant)
    assigned = set(participant.assignments.values_list("item__external_id", flat=True))
    assert assigned == {c.external_id for c in comparisons(study)}


def test_a_design_is_refused_once_answers_exist_and_says_why(alice):
    study = make(alice, PAIRWISE, items=outputs_csv())
    comparisons_generate(study=study, user=alice)
    study_open(study=study)
    # Opened without answers: still allowed.
    assert comparisons_generate(study=study, user=alice, seed=2) == 12
    participant = participants_invite(study=study, count=1)[0]
    store(participant, comparisons(study)[0], 0.0, question=study.primary_question)
    with pytest.raises(InputError) as raised:
        comparisons_generate(study=study, user=alice, seed=3)
    assert "cannot change" in str(raised.value) and "answers" in str(raised.value)
    assert Participant.objects.filter(study=study).count() == 1


@pytest.mark.parametrize(("kwargs", "column"), [
    ({"kind": "triples"}, "kind"), ({"per_pair": 0}, "per_pair"), ({"size": 2}, "size"),
    ({"kind": "tuples", "n_tuples": 0}, "n_tuples"), ({"kind": "tuples", "size": 5}, "size"),
])
def test_bad_design_parameters_are_named(alice, kwargs, column):
    study = make(alice, PAIRWISE, items=outputs_csv())
    with pytest.raises(InputError) as raised:
        comparisons_generate(study=study, user=alice, **kwargs)
    assert raised.value.problems[0].column == column


def test_a_study_without_systems_has_no_outputs_to_compare(alice):
    study = make(alice, PAIRWISE, items="id,text\na,One\nb,Two\n")
    with pytest.raises(InputError, match="items with a system"):
        comparisons_generate(study=study, user=alice)


def test_outputs_without_a_source_get_plain_ids(alice):
    study = make(alice, PAIRWISE, items="id,text,system\na,One,X\nb,Two,Y\ncmp-1,Three,Z\n")
    assert comparisons_generate(study=study, user=alice) == 3
    assert sorted(c.external_id for c in comparisons(study)) == ["cmp-2", "cmp-3", "cmp-4"]


# --- items files with outputs ----------------------------------------------------------------


def test_an_items_file_with_outputs_creates_comparisons(alice):
    study = make(alice, [*PAIRWISE, {"key": "q", "scale": "likert-1-5"}])
    data = ("id,text,system,source,outputs\n"
            "a,Alpha,X,s,\n"
            "b,Beta,Y,s,\n"
            "ab,,,s,a|b\n")
    assert items_import(study=study, data=data.encode(), filename="items.csv") == 3
    comparison = study.items.get(external_id="ab")
    assert comparison.outputs == ["a", "b"] and comparison.meta == {"design": "file"}
    assert comparison.role == "main"
    # A later file may compare the study's items.
    items_import(study=study, data=b"id,text,outputs\nba,,b|a\n", filename="more.csv")
    assert study.items.get(external_id="ba").outputs == ["b", "a"]


def test_an_items_file_with_only_comparative_questions_makes_its_outputs_output_items(alice):
    study = make(alice, PAIRWISE)
    data = "id,text,outputs\na,Alpha,\nb,Beta,\nab,,a|b\n"
    items_import(study=study, data=data.encode(), filename="items.csv")
    assert dict(study.items.values_list("external_id", "role")) == {
        "a": "output", "b": "output", "ab": "main"}


@pytest.mark.parametrize(("rows", "line", "words"), [
    ("a,Alpha,\nab,,a|zz\n", 3, "no item 'zz'"),
    ("a,Alpha,\nab,,a\n", 3, "2 to 8 outputs"),
    ("a,Alpha,\nb,Beta,\nab,,a|a\n", 4, "named twice"),
    ("a,Alpha,\nb,Beta,\nab,,a||b\n", 4, "none of them empty"),
    ("a,Alpha,\nb,Beta,\nab,,ab|b\n", 4, "cannot compare itself"),
    ("a,Alpha,\nb,Beta,\nab,,a|b\nabc,,ab|b\n", 5, "'ab' is a comparison"),
])
def test_bad_outputs_are_named_with_line_and_column(alice, rows, line, words):
    study = make(alice, PAIRWISE)
    with pytest.raises(InputError) as raised:
        items_import(study=study, data=("id,text,outputs\n" + rows).encode(),
                     filename="items.csv")
    problems = [(p.line, p.column, p.message) for p in raised.value.problems]
    assert any(p_line == line and column == "outputs" and words in message
               for p_line, column, message in problems), problems
    assert not study.items.exists()


def test_a_comparison_check_item_takes_an_outputs_place_as_known_answer(alice):
    study = make(alice, [*PAIRWISE, {"key": "q", "scale": "likert-1-5"}])
    good = ("id,text,outputs,role,gold:better\n"
            "a,Alpha,,,\nb,Beta,,,\nab,,a|b,check,1\n")
    items_import(study=study, data=good.encode(), filename="items.csv")
    assert study.items.get(external_id="ab").gold == {"better": 1.0}
    bad = ("id,text,outputs,role,gold:better,gold:q\n"
           "c,Gamma,,check,0,\ncd,,a|c,check,2,\nce,,a|c,check,,3\n")
    with pytest.raises(InputError) as raised:
        items_import(study=study, data=bad.encode(), filename="bad.csv")
    messages = {(p.line, p.column): p.message for p in raised.value.problems}
    assert "comparative" in messages[(2, "gold:better")]
    assert "not an output's place" in messages[(3, "gold:better")]
    assert "a scale question" in messages[(4, "gold:q")]


# --- the API ---------------------------------------------------------------------------------


def test_the_api_gives_each_questions_kind_and_each_items_outputs(alice):
    study = make(alice, DEFINITION["questions"], items=outputs_csv())
    comparisons_generate(study=study, user=alice)
    api = api_for(alice)
    one = api.get(f"/api/studies/{study.slug}/").json()
    kinds = {q["key"]: (q["kind"], q["comparison"], q["values"]) for q in one["questions"]}
    assert kinds["fluency"] == ("pairwise", {"ties": True, "strength": True}, [])
    assert kinds["quality"][:2] == ("scale", {})
    items = api.get(f"/api/studies/{study.slug}/items/?page_size=100").json()["results"]
    by_id = {i["id"]: i for i in items}
    assert by_id["s1-A"]["outputs"] == []
    assert sorted(by_id["cmp-s1-1"]["outputs"]) in [sorted(p) for p in combinations(
        [f"s1-{x}" for x in "ABCD"], 2)]
    definition = api.get(f"/api/studies/{study.slug}/definition/").json()
    assert definition["questions"][2] == definition["questions"][2] | {
        "kind": "bws", "options": {"size": 3}}


def test_the_api_creates_a_study_with_comparative_questions(alice):
    api = api_for(alice)
    created = api.post("/api/studies/", {**DEFINITION, "slug": "by-api"}, format="json")
    assert created.status_code == 201, created.content
    assert Question.objects.get(study__slug="by-api", key="order").kind == "ranking"
    bad = api.post("/api/studies/", {"slug": "bad-api", "title": "B", "questions": [
        {"key": "q", "kind": "pairwise", "options": {"strength": 2}}]}, format="json")
    assert bad.status_code == 400
    assert "questions[0].options.strength" in json.dumps(bad.json())


def test_the_api_builds_a_design(alice):
    study = make(alice, PAIRWISE, items=outputs_csv())
    api = api_for(alice)
    built = api.post(f"/api/studies/{study.slug}/comparisons/",
                     {"kind": "tuples", "size": 3, "n_tuples": 4, "seed": 1}, format="json")
    assert built.status_code == 201, built.content
    assert built.json() == {"created": 8}
    assert Item.objects.filter(study=study).exclude(outputs=[]).count() == 8
    bad = api.post(f"/api/studies/{study.slug}/comparisons/", {"kind": "pairs", "per_pair": 99},
                   format="json")
    assert bad.status_code == 400 and "per_pair" in json.dumps(bad.json())


def test_a_mixed_study_assigns_comparisons_beside_the_outputs_balanced_by_system(alice):
    study = make(alice, [*PAIRWISE, {"key": "q", "scale": "likert-1-5"}],
                 items=outputs_csv(sources=("s1", "s2", "s3", "s4")))
    comparisons_generate(study=study, user=alice)  # 24 comparisons, 16 outputs
    study.items_per_participant = 20
    study.save()
    study_open(study=study)
    participant = participants_invite(study=study, count=1)[0]
    participant_assign(participant=participant)
    assigned = list(Item.objects.filter(assignments__participant=participant)
                    .values_list("system", "outputs"))
    assert len(assigned) == 20
    systems = Counter(system for system, outputs in assigned if not outputs)
    # A comparison counts as an item of no system: five groups (four systems and none) of 4.
    assert systems == {"A": 4, "B": 4, "C": 4, "D": 4}
    assert sum(1 for system, outputs in assigned if outputs and system == "") == 4


def test_create_study_reads_a_definition_with_comparative_questions(alice, tmp_path):
    from io import StringIO

    from django.core.management import call_command

    path = tmp_path / "prefs.json"
    path.write_text(json.dumps(DEFINITION))
    out = StringIO()
    call_command("create_study", "--definition", str(path), "--owner", "alice", stdout=out)
    assert "Question 'fluency': Pairwise preference (ties True, strength True)." in out.getvalue()
    assert "Question 'best': Best–worst scaling (size 3)." in out.getvalue()


def test_an_output_cannot_be_deleted_while_a_comparison_compares_it(alice):
    from studies.services import item_delete

    study = make(alice, PAIRWISE, items="id,text,outputs\na,Alpha,\nb,Beta,\nab,,a|b\n")
    with pytest.raises(InputError, match="output of the comparison ab"):
        item_delete(item=study.items.get(external_id="a"))
    item_delete(item=study.items.get(external_id="ab"))
    # Compared nowhere now: main items again.
    assert dict(study.items.values_list("external_id", "role")) == {"a": "main", "b": "main"}
    item_delete(item=study.items.get(external_id="a"))


def test_a_clone_keeps_the_comparisons_and_the_outputs_roles(alice):
    study = make(alice, PAIRWISE, items=outputs_csv())
    comparisons_generate(study=study, user=alice, seed=9)
    clone = study_clone(study=study, slug="cmp-copy", user=alice)
    def rows(s):
        return sorted(s.items.values_list("external_id", "role", "outputs", "source", "meta"))
    assert rows(clone) == rows(study)
