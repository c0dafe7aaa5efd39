"""Readers: every bad input yields ONE InputError listing every problem with file/line/column."""

import json

import pytest

from core.metrics.formats import (
    Mention,
    read_conll2012,
    read_gold_and_system,
    read_rucoco_json,
)
from core.problems import Collector, InputError, Problem

GOOD_CONLL = """#begin document (doc1); part 000
doc1 0 0 John (0)
doc1 0 1 met -
doc1 0 2 his (0)|(1
doc1 0 3 brother 1)
doc1 0 4 . -

doc1 0 0 He (1)
doc1 0 1 smiled -
#end document
#begin document (doc2); part 000
doc2 0 0 Hi -
#end document
"""


def problems_of(call, *args, **kwargs):
    with pytest.raises(InputError) as info:
        call(*args, **kwargs)
    return [(p.line, p.column, p.message) for p in info.value.problems], info.value


def test_it_reads_conll_documents_and_mentions():
    doc1, doc2 = read_conll2012(GOOD_CONLL, "gold.conll")
    assert doc1.name == "doc1-000" and doc2.name == "doc2-000"
    assert doc1.entities == (
        (Mention(0, 0, 1), Mention(0, 2, 3)),
        (Mention(0, 2, 4), Mention(1, 0, 1)),
    )
    assert doc1.sentence_lengths == (5, 2)
    assert doc2.entities == ()


def test_it_formats_a_problem_as_file_line_column_message():
    assert str(Problem("gold.conll", 12, 5, "unclosed mention (7")) == (
        "gold.conll:12: column 5: unclosed mention (7"
    )
    assert str(Problem("gold.conll", None, None, "no document")) == "gold.conll: no document"


def test_it_lists_every_conll_problem_in_one_error():
    text = (
        "#begin document (d); part 000\n"
        "d 0 0 A (7\n"            # line 2: never closed
        "d 0 1 B (2\n"            # line 3: never closed
        "d 0 3 D 3)\n"            # line 4: closing without opening
        "#end document\n"
    )
    found, error = problems_of(read_conll2012, text, "gold.conll")
    assert found == [
        (4, 9, "closing bracket 3) without an opening one"),
        (2, 9, "unclosed mention (7"),
        (3, 9, "unclosed mention (2"),
    ]
    assert "gold.conll:2: column 9: unclosed mention (7" in str(error)


def test_it_reads_what_the_scorers_read_and_warns_about_what_it_passed_over():
    text = (
        "#begin document (d); part 000\n"
        "d 0 0 A (7\n"
        "d 0 1 B x)\n"            # line 3: a stray token, not a bracket
        "d 0 2 C\n"               # line 4: four columns: C is read as its coreference cell
        "d 0 3 D 7)\n"
        "d 0 4 E ((4)\n"          # line 6: a stray "(" before (4)
        "#end document\n"
    )
    warnings = Collector("gold.conll")
    (doc,) = read_conll2012(text, "gold.conll", warnings)
    assert set(doc.entities) == {(Mention(0, 0, 4),), (Mention(0, 4, 5),)}
    assert [(p.line, p.column, p.message) for p in warnings.problems] == [
        (3, 9, "ignored 'x)' in the coreference column (not a mention bracket)"),
        (4, 1, "4 columns where the first token line has 5; the last one is read as the "
               "coreference column"),
        (4, 7, "ignored 'C' in the coreference column (not a mention bracket)"),
        (6, 9, "ignored '(' in the coreference column (not a mention bracket)"),
    ]


def test_it_points_at_the_part_of_a_multi_part_cell():
    text = "#begin document (d);\nd 0 0 A (3|(4)|(5\nd 0 1 B 3)\n#end document\n"
    found, _ = problems_of(read_conll2012, text, "f")
    assert found == [(2, 16, "unclosed mention (5")]


def test_it_reports_a_mention_crossing_a_sentence_boundary():
    text = "#begin document (d);\nd 0 0 A (1\n\nd 0 0 B 1)\n#end document\n"
    found, _ = problems_of(read_conll2012, text, "f")
    assert found == [(2, 9, "unclosed mention (1"), (4, 9, "closing bracket 1) without an opening one")]


def test_it_reports_document_structure_problems():
    text = "x 0 0 A -\n#begin document (d);\nd 0 0 A -\n#end document\n#end document\n" \
           "#begin document (e);\ne 0 0 A -\n"
    found, _ = problems_of(read_conll2012, text, "f")
    assert found == [
        (1, 1, "token line outside a document"),
        (5, 1, "#end document without #begin document"),
        (6, 1, "document (e) has no #end document"),
    ]


def test_it_reports_empty_conll_input():
    found, _ = problems_of(read_conll2012, "\n\n", "gold.conll")
    assert found == [(None, None, "no document found (empty input)")]


def test_it_reports_repeated_document_names():
    text = "#begin document (d); part 0\nd 0 0 A -\n#end document\n" * 2
    found, _ = problems_of(read_conll2012, text, "f")
    assert found == [(4, 1, "document (d) part 0 repeats the one at line 1")]


RUCOCO = {
    "entities": [[[31, 34]], [[39, 42], [100, 103]], [[71, 75]]],
    "includes": [[], [], [0, 1]],
    "text": "At half-past nine, that night, Tom and Sid were sent to bed, as usual. "
            "They said their prayers, and Sid was soon asleep\n",
}


def test_it_reads_the_rucoco_readme_example():
    (doc,) = read_rucoco_json(json.dumps(RUCOCO), "gold.json")
    assert doc.text[31:34] == "Tom"
    assert doc.entities[2] == (Mention(0, 71, 75),)
    assert doc.includes == ((), (), (0, 1))


@pytest.mark.parametrize("layout", ["object", "list", "jsonl"])
def test_it_accepts_an_object_a_list_or_json_lines(layout):
    text = {
        "object": json.dumps(RUCOCO, indent=2),
        "list": json.dumps([RUCOCO, RUCOCO], indent=1),
        "jsonl": json.dumps(RUCOCO) + "\n\n" + json.dumps(RUCOCO) + "\n",
    }[layout]
    docs = read_rucoco_json(text, "f.json")
    assert len(docs) == (1 if layout == "object" else 2)
    assert all(d.includes == ((), (), (0, 1)) for d in docs)


def test_it_lists_every_rucoco_problem_in_one_error():
    bad = {
        "text": "0123456789",
        "entities": [[[0, 2], [5, 20]], [[4, 4]], [[1, 3], [0, 2]], [[6, 7]], [[8, 9]]],
        "includes": [[], [7], [], [4], [3]],
    }
    good = {"text": "ab", "entities": [[[0, 1], [1, 2]]], "includes": [[]]}
    text = json.dumps(good) + "\n" + json.dumps(bad) + "\n"
    found, _ = problems_of(read_rucoco_json, text, "sys.jsonl")
    assert found == [
        (2, 1, "document 2: entities[0][1]: span [5, 20] lies outside the text (length 10)"),
        (2, 1, "document 2: entities[1][0]: start 4 is not before end 4"),
        (2, 1, "document 2: entities[2][1]: span [0, 2] already belongs to entities[0]"),
        (2, 1, "document 2: includes[1] points to a missing entity 7"),
        (2, 1, "document 2: includes form a cycle: 3 → 4 → 3"),
    ]


def test_it_locates_documents_of_a_json_list():
    text = '[\n  {"text": "ab", "entities": [[[0, 1], [1, 2]]], "includes": [[]]},\n' \
           '  {"text": "ab", "entities": [[[0, 9]]]}\n]'
    found, _ = problems_of(read_rucoco_json, text, "f.json")
    assert found == [(3, 3, "document 2: entities[0][0]: span [0, 9] lies outside the text (length 2)")]


def test_it_reports_invalid_json_with_its_position():
    found, _ = problems_of(read_rucoco_json, '{"text": "a",\n "entities": [}', "f.json")
    assert found[0][:2] == (2, 15) and found[0][2].startswith("invalid JSON")


@pytest.mark.parametrize("text", [
    "[" * 100_000 + "]" * 100_000,
    '{"text": "a", "entities": ' + "[" * 30 + "]" * 30 + "}",
])
def test_it_refuses_absurdly_nested_json_without_parsing_it(text):
    found, _ = problems_of(read_rucoco_json, text, "f.json")
    assert found == [(None, None, "invalid JSON: nested deeper than 20 levels")]


def test_it_reports_a_number_too_long_to_convert_as_invalid_json():
    found, _ = problems_of(read_rucoco_json, '{"text": "a", "entities": [[[0, ' + "1" * 5000
                           + "]]]}", "f.json")
    assert len(found) == 1 and found[0][2].startswith("invalid JSON: Exceeds the limit")


def test_it_locates_every_document_of_a_long_json_list():
    docs = [{"text": "ab", "entities": [[[0, 9]]]}] * 3
    text = "[\n" + ",\n".join(json.dumps(d) for d in docs) + "\n]"
    found, _ = problems_of(read_rucoco_json, text, "f.json")
    assert [(line, column) for line, column, _ in found] == [(2, 1), (3, 1), (4, 1)]


def test_it_reports_empty_json_input():
    found, _ = problems_of(read_rucoco_json, "  \n", "f.json")
    assert found == [(None, None, "no document found (empty input)")]


def test_it_reports_mismatched_document_sets_as_one_problem():
    system = GOOD_CONLL.split("#begin document (doc2)")[0] + \
        "#begin document (doc3); part 000\ndoc3 0 0 Hi -\n#end document\n"
    found, error = problems_of(
        read_gold_and_system, GOOD_CONLL, system, format="conll2012",
        gold_file="gold.conll", system_file="sys.conll",
    )
    assert found == [(None, None, "gold has 2 documents, system has 2; missing from the system: "
                      "doc2-000; not in the gold: doc3-000")]
    assert error.problems[0].file == "sys.conll"


def test_it_collects_problems_of_both_files_at_once():
    found, error = problems_of(
        read_gold_and_system, "#begin document (d);\nd 0 0 A (1\n#end document\n", "",
        format="conll2012", gold_file="g", system_file="s",
    )
    assert [p.file for p in error.problems] == ["g", "s"]


def test_it_reports_different_tokenisations():
    other = GOOD_CONLL.replace("doc1 0 1 smiled -\n", "")
    found, _ = problems_of(read_gold_and_system, GOOD_CONLL, other, format="conll2012")
    assert found == [(None, None, "document doc1-000: tokenisation differs from the gold "
                      "(sentence 2 has 2 tokens in the gold, 1 here)")]


def test_it_pairs_gold_and_system_documents_by_name():
    system = GOOD_CONLL.split("#begin document (doc2)")
    system = "#begin document (doc2)" + system[1] + system[0]
    pairs = read_gold_and_system(GOOD_CONLL, system, format="conll2012")
    assert [(g.name, s.name) for g, s in pairs] == [("doc1-000", "doc1-000"), ("doc2-000", "doc2-000")]


def test_it_reports_mismatched_rucoco_document_counts():
    found, _ = problems_of(
        read_gold_and_system, json.dumps([RUCOCO, RUCOCO]), json.dumps(RUCOCO),
        format="rucoco-json",
    )
    assert found == [(None, None, "gold has 2 documents, system has 1")]


def test_it_reports_a_rucoco_text_that_differs_from_the_gold():
    other = dict(RUCOCO, text=RUCOCO["text"].upper())
    found, _ = problems_of(read_gold_and_system, json.dumps(RUCOCO), json.dumps(other),
                           format="rucoco-json")
    assert found == [(None, None, "document 1 (#1): text differs from the gold's")]


def test_it_ignores_unknown_rucoco_keys_with_one_warning_per_document():
    text = json.dumps([{"text": "Ann saw Bob.", "entities": [[[0, 3]]], "lang": "ru",
                        "annotator": "x"},
                       {"text": "He left.", "entities": []}])
    warnings = Collector("r.json")
    docs = read_rucoco_json(text, "r.json", warnings)
    assert [d.entities for d in docs] == [((Mention(0, 0, 3),),), ()]
    assert [(p.line, p.message) for p in warnings.problems] == [
        (1, "document 1: ignored the key(s) 'annotator', 'lang'")]
