"""A judge's answers file (`core.judges.judge_answers_parse`, docs/judges.md)."""

from __future__ import annotations

import dataclasses
import io
import time

import numpy as np
import pytest

from core.judges import (
    Comparison,
    JudgeAnswers,
    JudgeInfo,
    judge_answers_parse,
    judge_answers_stream,
)
from core.problems import InputError
from core.responses.comparisons import ComparativeQuestion
from core.tabular import Limits

ITEMS = {"i1", "i2", "i3", "=x"}
SCALES = {"fluency": (1, 2, 3, 4, 5)}
TWO_SCALES = {"fluency": (1, 2, 3, 4, 5), "adequacy": (0, 1)}
PAIR = {"better": ComparativeQuestion("pairwise", {"ties": True, "strength": True})}
COMPARISONS = {frozenset("ab"): Comparison("c1", ("a", "b")),
               frozenset("abcd"): Comparison("c2", ("a", "b", "c", "d"))}


def parse(text: str | bytes, **kwargs):
    options = {"items": ITEMS, "scales": SCALES, "max_bytes": 1 << 20, **kwargs}
    data = text.encode() if isinstance(text, str) else text
    return judge_answers_parse(data, filename="j.csv", judge="gpt", **options)


def problems(text: str | bytes, **kwargs) -> list[tuple[int | None, object, str]]:
    with pytest.raises(InputError) as caught:
        parse(text, **kwargs)
    return [(p.line, p.column, p.message) for p in caught.value.problems]


def test_the_contract_dataclasses_have_the_fields_the_analysis_reads():
    info = JudgeInfo(name="j", temperature=0.0)
    assert [f.name for f in dataclasses.fields(info)] == [
        "name", "model", "prompt", "version", "date", "temperature", "notes"]
    answers = JudgeAnswers(judge="j", run="1", question="q", item_ids=("i1",),
                           value=np.array([1.0]))
    assert answers.choices == () and answers.rationale == ()
    with pytest.raises(dataclasses.FrozenInstanceError):
        answers.run = "2"  # type: ignore[misc]


def test_it_reads_scale_answers_with_the_default_run():
    read = parse("item,value,rationale\ni1,4,clear\ni2,5,\n")
    assert [(r.line, r.run, r.question, r.item, r.value, r.rationale) for r in read.rows] == [
        (2, "1", "fluency", "i1", 4.0, "clear"), (3, "1", "fluency", "i2", 5.0, "")]
    assert read.runs == ["1"] and read.warnings == []


def test_it_labels_the_rows_without_a_run_with_the_run_given():
    read = parse("item,value,run\ni1,4,\ni1,3,b\n", run="a")
    assert [(r.run, r.value) for r in read.rows] == [("a", 4.0), ("b", 3.0)]
    assert read.runs == ["a", "b"]


def test_it_names_a_value_outside_the_scale_with_its_line_and_column():
    assert problems("item,value\ni1,4\ni2,9\n") == [
        (3, "value", "'9' is not a value of the scale (1, 2, 3, 4, 5)")]


def test_it_names_an_unknown_item_and_an_unknown_question():
    found = problems("item,value,question\nnope,4,fluency\ni1,4,style\n",
                     scales=TWO_SCALES)
    assert (2, "item", "'nope' is not an item id of this study (an item, not a comparison)"
            ) in found
    assert found[-1][:2] == (3, "question") and "'style' is not a question" in found[-1][2]


def test_it_needs_the_question_column_when_the_study_has_two_scales():
    found = problems("item,value\ni1,1\n", scales=TWO_SCALES)
    assert found == [(1, None, "the required column 'question' is missing: this study asks "
                               "several scale questions (fluency, adequacy)")]


def test_it_refuses_a_row_given_twice_in_one_run_but_not_in_two():
    assert problems("item,value,run\ni1,4,1\ni1,3,1\n") == [
        (3, None, "duplicate row: run '1' already answers question 'fluency' about 'i1' on "
                  "line 2")]
    assert len(parse("item,value,run\ni1,4,1\ni1,3,2\n").rows) == 2


def test_it_warns_about_an_unknown_column_and_reads_the_rest():
    read = parse("item,value,model,temperature\ni1,4,gpt,0\n")
    assert [r.value for r in read.rows] == [4.0]
    assert read.warnings == ["columns not read: model, temperature (a judge's file has item, "
                             "value, items, choice, question, run, rationale)"]


def test_it_skips_a_row_without_a_value_and_says_so():
    read = parse("item,value\ni1,\ni2,3\n")
    assert [r.item for r in read.rows] == ["i2"] and read.skipped == 1
    assert read.warnings == ["1 row without a value or a choice skipped (line 2)"]


def test_it_refuses_a_file_of_no_answer():
    assert problems("item,value\ni1,\n") == [
        (None, None, "the file holds no answer of this judge (1 row skipped)")]


def test_it_needs_both_columns_of_a_kind():
    assert problems("item,run\ni1,1\n") == [
        (1, None, "the column 'value' is missing (a judge's file has item,value columns)")]


def test_it_reads_a_comparative_judgment_in_the_comparisons_canonical_order():
    # The same pair in the other order is another run (one answer per run and comparison).
    read = parse("items,choice,rationale,run\nb|a,a,a is shorter,\na|b,tie,,y\n", scales={},
                 comparative=PAIR, comparisons=COMPARISONS, run="x")
    first, second = read.rows
    assert (first.question, first.item, first.value) == ("better", "c1", 0.0)
    assert first.choice == {"shown": ["b", "a"], "pick": "a", "strength": ""}
    assert first.rationale == "a is shorter"
    assert (first.run, second.run, second.value) == ("x", "y", 0.5)


def test_it_reads_best_worst_and_ranking_with_several_questions():
    questions = {"bws": ComparativeQuestion("bws", {"size": 4}),
                 "rank": ComparativeQuestion("ranking", {"ties": True})}
    read = parse("items,choice,question\nd|c|b|a,c|a,bws\na|b,b=a,rank\n", scales={},
                 comparative=questions, comparisons=COMPARISONS)
    bws, rank = read.rows
    assert bws.item == "c2" and bws.value == 2.0 and bws.choice["worst"] == "a"
    assert rank.choice == {"shown": ["a", "b"], "order": [["b", "a"]]}


def test_it_refuses_a_set_of_outputs_the_study_does_not_compare():
    found = problems("items,choice\na|c,a\n", scales={}, comparative=PAIR,
                     comparisons=COMPARISONS)
    assert found[0][:2] == (2, "items") and "no comparison of this study" in found[0][2]


def test_it_refuses_a_choice_not_shown_and_a_strength_without_a_choice():
    found = problems("items,choice,strength\na|b,c,\nb|a,,much\n", scales={}, comparative=PAIR,
                     comparisons=COMPARISONS)
    assert [(line, column) for line, column, _ in found] == [(2, "choice"), (3, "strength")]


def test_it_reads_a_file_of_both_kinds_row_by_row():
    read = parse("item,value,items,choice,question\ni1,4,,,fluency\n,,a|b,b,better\n",
                 comparative=PAIR, comparisons=COMPARISONS)
    assert [(r.question, r.item, r.value) for r in read.rows] == [
        ("fluency", "i1", 4.0), ("better", "c1", 1.0)]
    # Without a question column each row goes to the one question of the kind it fills.
    read = parse("item,value,items,choice\ni1,4,,\n,,a|b,b\n", comparative=PAIR,
                 comparisons=COMPARISONS)
    assert [r.question for r in read.rows] == ["fluency", "better"]


def test_it_keeps_the_rows_of_its_judge_and_skips_the_others():
    read = parse("judge,item,value\ngpt,i1,4\nclaude,i1,2\ngpt,i2,1\n")
    assert [r.item for r in read.rows] == ["i1", "i2"]
    assert read.warnings == ["1 row of other judges skipped (the judge column names another "
                             "judge)"]


def test_it_reads_a_neutralised_cell_back():
    read = parse("item,value,rationale\n'=x,2,'=SUM(A1)\n")
    assert (read.rows[0].item, read.rows[0].rationale) == ("=x", "=SUM(A1)")


def test_it_refuses_a_bad_run_label():
    assert problems("item,value\ni1,4\n", run="") == [(None, "run", "the run's label is empty")]
    found = problems("item,value,run\ni1,4," + "r" * 201 + "\n")
    assert found == [(2, "run", "the run's label is longer than 200 characters")]


def test_it_refuses_a_study_without_questions():
    assert problems("item,value\ni1,4\n", scales={}) == [
        (None, None, "this study has no question yet: add its questions before a judge's "
                     "answers")]


# --- hostile input ----------------------------------------------------------------------------


def test_it_refuses_a_huge_line_quickly():
    start = time.perf_counter()
    found = problems(b"item,value,rationale\ni1,4,\"" + b"x" * 3_000_000 + b"\"\n",
                     max_bytes=10 << 20)
    assert time.perf_counter() - start < 5
    assert found == [(2, None, "a field is longer than 131072 characters (is a quote left open?)")]


def test_it_refuses_too_many_columns_before_reading_the_rows():
    header = ",".join(f"c{n}" for n in range(5000))
    found = problems(f"item,value,{header}\ni1,4{',' * 5000}\n")
    assert found == [(1, None, "5002 columns in the header; the limit is 2000 columns")]


def test_it_refuses_a_file_over_the_size_limit():
    found = problems("item,value\n" + "i1,4\n" * 100, max_bytes=50)
    assert found[0][2].startswith("the file is 511 bytes; the limit is 50 bytes")


def test_it_names_a_latin_1_byte_and_refuses_utf_16():
    found = problems("item,value,rationale\ni1,4,caf\xe9\n".encode("latin-1"))
    assert found == [(2, 9, "byte 0xE9 is not UTF-8 (the file looks Windows-1252 or Latin-1); "
                            "save it as UTF-8")]
    found = problems("item,value\ni1,4\n".encode("utf-16"))
    assert "UTF-16" in found[0][2]


def test_it_refuses_a_nul_character_and_an_empty_file():
    found = problems(b"item,value,rationale\ni1,4,a\x00b\n")
    assert found == [(2, 3, "a NUL character (0x00) in the cell; remove it")]
    assert problems(b"  \n") == [(None, None, "the file is empty")]


def test_it_reports_a_million_bad_rows_in_a_bounded_list():
    with pytest.raises(InputError) as caught:
        parse("item,value\n" + "i1,9\n" * 20_000, max_bytes=1 << 20)
    assert len(caught.value.problems) == 200 and caught.value.count == 20_000


def test_it_reads_a_file_a_chunk_at_a_time_with_the_same_rows():
    text = "item,value,run\n" + "".join(f"i{n % 3 + 1},{n % 5 + 1},{n // 3}\n"
                                        for n in range(3000))
    whole = parse(text)
    chunked = judge_answers_parse(io.BytesIO(text.encode()), filename="j.csv", judge="gpt",
                                  items=ITEMS, scales=SCALES, max_bytes=1 << 20)
    assert chunked.rows == whole.rows and len(whole.rows) == 3000


def test_it_stops_at_a_broken_quote_without_swallowing_the_file():
    found = problems('item,value,rationale\ni1,4,"open\ni2,3,x\n',
                     limits=Limits(max_field_chars=100))
    assert found and all(line is not None for line, _, _ in found)


def test_the_stream_checks_each_row_and_leaves_duplicates_to_the_consumer():
    stream = judge_answers_stream(b"item,value\ni1,4\ni1,4\n", filename="j.csv", judge="gpt",
                                  items=ITEMS, scales=SCALES, max_bytes=1000)
    assert [r.line for r in stream.rows] == [2, 3] and not stream.errors
