"""An items file's `outputs` column (docs/comparisons.md): a comparison's outputs checked on
their row and across the file, as the in-memory reader (`items_parse`) reads them."""

from __future__ import annotations

import pytest

from core.items import items_parse, outputs_problems
from core.problems import InputError


def parse(text: str, **kwargs):
    return items_parse(text.encode(), filename="items.csv", display="text",
                       existing_ids=kwargs.pop("existing", set()), max_bytes=10**6, **kwargs)


def test_a_comparison_names_its_outputs_in_order_and_needs_no_text():
    rows = parse("id,text,outputs,source\na,Alpha,,s\nb,Beta,,s\nba,, b | a ,s\n")
    assert [(r.external_id, r.outputs) for r in rows] == [("a", []), ("b", []),
                                                          ("ba", ["b", "a"])]


def test_outputs_may_name_the_studys_items_but_no_comparison():
    rows = parse("id,text,outputs\nxy,,x|y\n", existing={"x", "y"})
    assert rows[0].outputs == ["x", "y"]
    with pytest.raises(InputError) as raised:
        parse("id,text,outputs\nxc,,x|c\n", existing={"x", "c"},
              existing_comparisons=frozenset({"c"}))
    assert [(p.line, p.column) for p in raised.value.problems] == [(2, "outputs")]
    assert "'c' is a comparison" in raised.value.problems[0].message


@pytest.mark.parametrize(("cell", "words"), [
    ("a|b|c|d|e|f|g|h|i", "2 to 8 outputs"),
    ("a|", "none of them empty"),
    ("a|nope", "no item 'nope'"),
])
def test_bad_outputs_name_line_and_column(cell, words):
    text = "id,text,outputs\n" + "".join(f"{n},T,\n" for n in "abcdefghi") + f"z,,{cell}\n"
    with pytest.raises(InputError) as raised:
        parse(text)
    assert [(p.line, p.column) for p in raised.value.problems] == [(11, "outputs")]
    assert words in raised.value.problems[0].message


def test_a_comparison_has_no_system_and_is_no_control():
    with pytest.raises(InputError) as raised:
        parse("id,text,outputs,system,control\na,A,,,\nb,B,,,\nab,,a|b,X,1\n")
    assert {(p.line, p.column) for p in raised.value.problems} == {(4, "system"),
                                                                   (4, "control")}


def test_outputs_problems_report_every_row_in_order():
    problems = outputs_problems("f.csv", [(2, ["a", "b"]), (5, ["a", "q", "r"])],
                                known={"a", "b"}.__contains__)
    assert [(p.line, p.message) for p in problems] == [
        (5, "no item 'q' in this file or study (and 1 more)")]
