"""The long file of comparative judgments (`core.responses.comparisons.judgments_parse`)."""

from __future__ import annotations

import io

import pytest

from core.problems import InputError
from core.responses.comparisons import ComparativeQuestion, judgments_parse
from core.tabular import Limits

OUTPUTS = ["a", "b", "c", "d", "e", "=x"]
PAIR = {"better": ComparativeQuestion("pairwise", {"ties": True, "strength": True})}


def parse(text: str, questions=None, **kwargs):
    return judgments_parse(text.encode(), filename="j.csv", outputs=OUTPUTS,
                           questions=questions or PAIR, max_bytes=1 << 20, **kwargs)


def problems(text: str, questions=None, **kwargs) -> list[tuple[int | None, object, str]]:
    with pytest.raises(InputError) as caught:
        parse(text, questions, **kwargs)
    return [(p.line, p.column, p.message) for p in caught.value.problems]


def test_it_reads_a_good_file_into_annotators_and_their_judgments():
    warnings: list[str] = []
    read = parse("annotator,items,choice,comment\n"
                 "ann1,a|b,b,fine\n"
                 "ann1,c|a,c,\n"
                 "ann2,b|a,a,\n", warnings=warnings)
    assert [a.external_id for a in read.annotators] == ["ann1", "ann2"]
    first = read.annotators[0].judged[frozenset("ab")]
    assert first.outputs == ("a", "b")
    cell = first.cells["better"]
    assert (cell.value, cell.comment) == (1.0, "fine")
    assert cell.choice == {"shown": ["a", "b"], "pick": "b", "strength": ""}
    # The second annotator saw b first; the comparison stays (a, b): a is index 0.
    cell = read.annotators[1].judged[frozenset("ab")].cells["better"]
    assert cell.value == 0.0 and cell.choice["shown"] == ["b", "a"]
    assert read.new == [("a", "b"), ("c", "a")]
    assert warnings == ["2 comparisons of outputs this study does not compare yet will be "
                        "created"]


def test_it_takes_the_canonical_order_of_an_existing_comparison():
    read = parse("annotator,items,choice\nann1,a|b,a\n",
                 comparisons={frozenset("ab"): ["b", "a"]})
    judged = read.annotators[0].judged[frozenset("ab")]
    assert judged.outputs == ("b", "a")
    assert judged.cells["better"].value == 1.0  # a is second in the comparison's order
    assert judged.cells["better"].choice["shown"] == ["a", "b"]  # as listed in the file
    assert read.new == []


def test_it_reads_a_tie_and_a_strength():
    read = parse("annotator,items,choice,strength\nann1,a|b,tie,\nann2,a|b,a,much\n")
    tie = read.annotators[0].judged[frozenset("ab")].cells["better"]
    assert (tie.value, tie.choice["pick"]) == (0.5, "tie")
    strong = read.annotators[1].judged[frozenset("ab")].cells["better"]
    assert strong.choice == {"shown": ["a", "b"], "pick": "a", "strength": "much"}


def test_it_refuses_a_tie_the_question_does_not_allow():
    questions = {"better": ComparativeQuestion("pairwise", {})}
    assert problems("annotator,items,choice\nann1,a|b,tie\n", questions) == [
        (2, "choice", "this question allows no tie")]


def test_it_reads_a_ranking_with_ties():
    questions = {"rank": ComparativeQuestion("ranking", {"ties": True})}
    read = parse("annotator,items,choice\nann1,a|b|c,a|b=c\n", questions)
    cell = read.annotators[0].judged[frozenset("abc")].cells["rank"]
    assert cell.choice == {"shown": ["a", "b", "c"], "order": [["a"], ["b", "c"]]}
    assert cell.value == 0.0


def test_it_refuses_a_ranking_tie_without_the_option():
    questions = {"rank": ComparativeQuestion("ranking", {})}
    assert problems("annotator,items,choice\nann1,a|b|c,a|b=c\n", questions) == [
        (2, "choice", "this question allows no tie")]


def test_it_reads_best_worst():
    questions = {"bws": ComparativeQuestion("bws", {"size": 4})}
    read = parse("annotator,items,choice\nann1,d|c|b|a,c|a\n", questions)
    cell = read.annotators[0].judged[frozenset("abcd")].cells["bws"]
    assert cell.choice == {"shown": ["d", "c", "b", "a"], "best": "c", "worst": "a"}
    assert cell.value == 1.0  # c is second in the new comparison's order (d, c, b, a)


def test_it_refuses_a_bws_choice_of_one_output():
    questions = {"bws": ComparativeQuestion("bws", {})}
    assert problems("annotator,items,choice\nann1,a|b|c|d,c\n", questions) == [
        (2, "choice", "a best–worst choice is best|worst")]


def test_it_names_an_unknown_output_with_its_line_and_column():
    assert problems("annotator,items,choice\nann1,a|b,a\nann1,a|zz,a\n") == [
        (3, "items", "'zz' is not an item id of this study (an output a comparison may show)")]


def test_it_refuses_too_many_outputs_for_the_kind():
    assert problems("annotator,items,choice\nann1,a|b|c,a\n") == [
        (2, "items", "a pairwise question compares 2 to 2 outputs, not 3")]


def test_it_refuses_a_choice_that_is_not_shown():
    assert problems("annotator,items,choice\nann1,a|b,c\n") == [
        (2, "choice", "pick: 'c' is not one of the outputs shown")]


def test_it_refuses_an_output_listed_twice_and_an_empty_one():
    found = problems("annotator,items,choice\nann1,a|a,a\nann1,a||b,a\n")
    assert (2, "items", "an output is listed twice in 'a|a'") in found
    assert (3, "items", "an empty output id in 'a||b'") in found


def test_it_refuses_a_duplicate_judgment_whatever_the_order_shown():
    assert problems("annotator,items,choice\nann1,a|b,a\nann1,b|a,b\n") == [
        (3, None, "duplicate row: annotator 'ann1' already judged these outputs on line 2")]


def test_it_reads_without_a_question_column_when_the_study_has_one_comparative_question():
    read = parse("annotator,items,choice\nann1,a|b,a\n")
    assert "better" in read.annotators[0].judged[frozenset("ab")].cells


def test_it_needs_the_question_column_when_the_study_has_two():
    questions = {**PAIR, "fluent": ComparativeQuestion("pairwise", {})}
    assert problems("annotator,items,choice\nann1,a|b,a\n", questions) == [
        (1, None, "the required column 'question' is missing: this study asks several "
                  "comparative questions (better, fluent)")]


def test_it_reads_two_questions_about_one_comparison_as_one_presentation():
    questions = {**PAIR, "fluent": ComparativeQuestion("pairwise", {})}
    read = parse("annotator,items,choice,question\nann1,a|b,a,better\nann1,b|a,b,fluent\n",
                 questions)
    judged = read.annotators[0].judged
    assert list(judged) == [frozenset("ab")]
    assert judged[frozenset("ab")].cells["fluent"].value == 1.0


def test_it_names_an_unknown_question():
    assert problems("annotator,items,choice,question\nann1,a|b,a,nope\n") == [
        (2, "question", "'nope' is not a comparative question of this study (its comparative "
                        "questions: better)")]


def test_it_reads_a_missing_judgment_and_skips_an_empty_row():
    warnings: list[str] = []
    read = parse("annotator,items,choice,missing\nann1,a|b,,cant_judge\nann1,a|c,,\n",
                 warnings=warnings)
    cell = read.annotators[0].judged[frozenset("ab")].cells["better"]
    assert (cell.value, cell.missing, cell.choice) == (None, "cant_judge", None)
    assert read.skipped == 1
    assert warnings[0] == ("1 row without a choice, a missing reason or a comment skipped "
                           "(line 3)")


def test_it_refuses_a_choice_with_a_missing_reason():
    assert problems("annotator,items,choice,missing\nann1,a|b,a,skipped\n") == [
        (2, "missing", "a choice and a missing reason (skipped): leave one of them empty")]


def test_it_refuses_a_strength_the_question_does_not_take():
    questions = {"better": ComparativeQuestion("pairwise", {})}
    assert problems("annotator,items,choice,strength\nann1,a|b,a,much\n", questions) == [
        (2, "strength", "this question takes no strength")]


def test_it_refuses_an_annotator_already_imported():
    assert problems("annotator,items,choice\nann1,a|b,a\n", existing_annotators=["ann1"]) == [
        (2, "annotator", "annotator 'ann1' was already imported into this study; remove "
                         "their rows or import them into another study")]


def test_it_reads_the_judgments_export_back_with_a_neutralised_output_id():
    warnings: list[str] = []
    read = parse("annotator,item,question,kind,shown,choice,strength,value,left,missing,"
                 "comment,revision,received_at\n"
                 "A1,cmp-1,better,pairwise,'=x|a,'=x,,0,true,,,1,2026-01-01\n",
                 warnings=warnings)
    cell = read.annotators[0].judged[frozenset({"=x", "a"})].cells["better"]
    assert cell.choice == {"shown": ["=x", "a"], "pick": "=x", "strength": ""}
    assert warnings[0].startswith("columns not read: item, kind, value, left, revision")


def test_it_refuses_an_unknown_column():
    assert problems("annotator,items,choice,colour\nann1,a|b,a,red\n") == [
        (1, "colour", "unknown column 'colour' (expected annotator, items, choice, question, "
                      "comment, strength, missing)")]


def test_it_names_every_required_column_missing():
    assert problems("annotator,choice\nann1,a\n") == [
        (1, None, "the required column 'items' is missing")]


def test_it_refuses_a_study_without_a_comparative_question():
    with pytest.raises(InputError, match="no comparative question"):
        judgments_parse(b"annotator,items,choice\n", filename="j.csv", outputs=OUTPUTS,
                        questions={}, max_bytes=1000)


def test_it_refuses_a_huge_field_within_the_limits():
    text = "annotator,items,choice\nann1," + "a|" * 200 + "b,a\n"
    found = problems(text, limits=Limits(max_field_chars=100))
    assert found[0][:2] == (2, 2)
    assert "the limit is 100" in found[0][2]


def test_it_refuses_too_many_columns_before_reading_the_rows():
    text = ",".join(f"c{n}" for n in range(3000)) + "\nann1\n"
    found = problems(text)
    assert found == [(1, None, "3000 columns in the header; the limit is 2000 columns")]


def test_it_refuses_a_row_of_another_width():
    assert problems("annotator,items,choice\nann1,a|b,a,extra\n") == [
        (2, None, "4 fields where the header has 3 (delimiter ',')")]


def test_it_reads_a_file_a_chunk_at_a_time():
    data = io.BytesIO(b"annotator,items,choice\nann1,a|b,a\n")
    read = judgments_parse(data, filename="j.csv", outputs=OUTPUTS, questions=PAIR,
                           max_bytes=1000)
    assert read.rows == 1


def test_it_refuses_an_empty_annotator_and_a_long_one():
    found = problems(f"annotator,items,choice\n,a|b,a\n{'x' * 201},a|b,a\n")
    assert (2, "annotator", "empty annotator id") in found
    assert (3, "annotator", "annotator id longer than 200 characters") in found


def test_it_names_an_output_id_a_ranking_cannot_write():
    questions = {"rank": ComparativeQuestion("ranking", {"ties": True})}
    found = judgments_parse(b"annotator,items,choice\nann1,a|b,a|b\n", filename="j.csv",
                            outputs=["a", "b", "c=d"], questions=questions, max_bytes=1000)
    assert found.rows == 1
    with pytest.raises(InputError) as caught:
        judgments_parse(b"annotator,items,choice\nann1,a|c=d,a|c=d\n", filename="j.csv",
                        outputs=["a", "b", "c=d"], questions=questions, max_bytes=1000)
    assert [(p.line, p.column) for p in caught.value.problems] == [(2, "items")]
    assert "holds '='" in caught.value.problems[0].message
