"""A bundle's revisions file with comparative judgments (`core.bundles.revisions_parse`): the
`choice` column read back, checked against the comparison's outputs, its value derived again."""

from __future__ import annotations

import json

import pytest

from core.bundles import revisions_parse
from core.problems import InputError

HEADER = ("annotator,item,presentation,position,revision,current,question,value,missing,"
          "comment,active_ms,source,choice\n")
COMPARATIVE = {"better": ("pairwise", {"ties": True})}
OUTPUTS = {"cmp-1": ["x", "y"]}


def choice(**judgment) -> str:
    return '"' + json.dumps(judgment).replace('"', '""') + '"'


def parse(rows: str):
    return revisions_parse((HEADER + rows).encode(), filename="revisions.csv",
                           items={"x", "y", "cmp-1"}, questions={"score": [1, 2, 3]},
                           comparative=COMPARATIVE, outputs=OUTPUTS, max_bytes=1 << 20)


def problems(rows: str) -> list[tuple[int | None, object, str]]:
    with pytest.raises(InputError) as caught:
        parse(rows)
    return [(p.line, p.column, p.message) for p in caught.value.problems]


def test_it_reads_a_judgment_and_derives_its_value_from_the_comparison():
    presented = parse(f"A1,cmp-1,1,1,1,1,better,1,,,900,app,"
                      f"{choice(shown=['y', 'x'], pick='y', strength='')}\n"
                      "A1,x,1,2,1,1,score,3,,,500,app,\n")
    cell = presented[0].revisions[0].cells["better"]
    assert (cell.value, cell.choice) == (1.0, {"shown": ["y", "x"], "pick": "y",
                                                "strength": ""})
    scale = presented[1].revisions[0].cells["score"]
    assert (scale.value, scale.choice) == (3.0, None)


def test_it_reads_a_missing_judgment():
    cell = parse("A1,cmp-1,1,1,1,1,better,,cant_judge,,900,app,\n")[0].revisions[0].cells[
        "better"]
    assert (cell.value, cell.missing, cell.choice) == (None, "cant_judge", None)


def test_it_refuses_a_judgment_of_other_outputs():
    assert problems(f"A1,cmp-1,1,1,1,1,better,0,,,900,app,"
                    f"{choice(shown=['x', 'z'], pick='x')}\n") == [
        (2, "choice", "shown must list this comparison's outputs, each once")]


def test_it_refuses_a_choice_that_is_not_json_and_a_value_without_a_choice():
    found = problems("A1,cmp-1,1,1,1,1,better,0,,,900,app,{oops\n"
                     "A2,cmp-1,1,1,1,1,better,0,,,900,app,\n")
    assert found == [(2, "choice", "not a judgment in JSON"),
                     (3, "choice", "a value without its judgment (the choice column)")]


def test_it_refuses_a_judgment_with_a_missing_reason():
    assert problems(f"A1,cmp-1,1,1,1,1,better,,skipped,,900,app,"
                    f"{choice(shown=['x', 'y'], pick='x')}\n") == [
        (2, "missing", "a judgment and a missing reason (skipped): one of them is empty")]
