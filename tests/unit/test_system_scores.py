"""The system scores file (pure): lenient header, numbers, duplicates and unknown systems."""

import pytest

from core.problems import InputError
from core.system_scores import system_scores_parse

SYSTEMS = {"sys-A", "sys-B"}


def parse(text: str, systems=SYSTEMS):
    return system_scores_parse(text.encode(), filename="scores.csv", systems=systems,
                               max_bytes=10_000)


def problems(text: str) -> list[tuple[int | None, str | None, str]]:
    with pytest.raises(InputError) as caught:
        parse(text)
    return [(p.line, p.column, p.message) for p in caught.value.problems]


def test_it_reads_rows_with_a_lenient_header():
    parsed = parse(" System ;METRIC; Value \nsys-A;BLEU;31.5\nsys-B;BLEU;-2e1\n")
    assert [(r.line, r.system, r.metric, r.value) for r in parsed.rows] == [
        (2, "sys-A", "BLEU", 31.5), (3, "sys-B", "BLEU", -20.0)]
    assert parsed.metrics == ["BLEU"] and not parsed.warnings


def test_it_takes_the_columns_in_any_order():
    parsed = parse("value,system,metric\n0.5,sys-B,chrF\n")
    assert [(r.system, r.metric, r.value) for r in parsed.rows] == [("sys-B", "chrF", 0.5)]


def test_it_skips_an_unknown_system_with_a_warning():
    parsed = parse("system,metric,value\nsys-A,BLEU,1\nsys-Z,BLEU,2\n")
    assert [r.system for r in parsed.rows] == ["sys-A"]
    [warning] = parsed.warnings.problems
    assert (warning.line, warning.column) == (3, "system") and "sys-Z" in warning.message


def test_a_duplicate_names_the_line_of_its_first_use():
    assert problems("system,metric,value\nsys-A,BLEU,1\nsys-B,BLEU,2\nsys-A,BLEU,3\n") == [
        (4, "system", "system 'sys-A' and metric 'BLEU' already have a value on line 2")]


@pytest.mark.parametrize(("row", "expected"), [
    ("sys-A,BLEU,high", (2, "value", "'high' is not a finite number")),
    ("sys-A,BLEU,nan", (2, "value", "'nan' is not a finite number")),
    ("sys-A,BLEU,", (2, "value", "empty value")),
    (",BLEU,1", (2, "system", "empty system")),
    ("sys-A,,1", (2, "metric", "empty metric")),
    ("sys-A," + "m" * 201 + ",1", (2, "metric",
                                   "the metric has 201 characters; at most 200 are allowed")),
])
def test_a_bad_cell_is_named_with_its_line_and_column(row, expected):
    assert problems(f"system,metric,value\n{row}\n") == [expected]


def test_every_problem_is_named_at_once():
    found = problems("system,metric,value\nsys-A,BLEU,x\nsys-B,,1\n")
    assert [line for line, _, _ in found] == [2, 3]


def test_a_missing_or_unknown_column_is_named():
    found = problems("system,score,value\nsys-A,1,2\n")
    assert (1, "score", "unknown column 'score' (expected system, metric, value)") in found
    assert (1, None, "the required column 'metric' is missing") in found


def test_a_file_whose_every_system_is_unknown_is_refused():
    [(_, _, message)] = problems("system,metric,value\nsys-Z,BLEU,1\n")
    assert message.startswith("no row names a system of the study's items")


def test_an_empty_file_or_a_header_alone_is_refused():
    assert problems("")[0][2].startswith("the file is empty")
    assert problems("system,metric,value\n") == [(None, None, "the file has a header but no "
                                                              "scores")]


def test_it_undoes_the_neutralisation_of_an_exported_cell():
    parsed = parse("system,metric,value\n'=sys,BLEU,1\n", systems={"=sys"})
    assert parsed.rows[0].system == "=sys"
