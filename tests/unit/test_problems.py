"""The one error model: how a problem reads, and why a report never grows huge."""

import pytest

from core.problems import MAX_PROBLEMS, Collector, InputError, Problem


@pytest.mark.parametrize(("problem", "text"), [
    (Problem("items.csv", 4, "id", "empty id"), "items.csv:4: column id: empty id"),
    (Problem("gold.conll", 12, 5, "unclosed mention (7"), "gold.conll:12: column 5: unclosed mention (7"),
    (Problem("items.csv", 1, None, "no items"), "items.csv:1: no items"),
    (Problem("study", None, "slug", "taken"), "study: column slug: taken"),
    (Problem("gold.conll", None, None, "no document"), "gold.conll: no document"),
])
def test_it_renders_a_problem_as_file_line_column_message(problem, text):
    assert str(problem) == text


def test_it_keeps_the_first_problems_and_counts_the_rest():
    errors = Collector("f.csv", limit=3)
    for line in range(1, 11):
        errors.add("bad", line=line)
    assert [p.line for p in errors.problems] == [1, 2, 3]
    assert (errors.omitted, errors.count) == (7, 10)
    with pytest.raises(InputError) as caught:
        errors.raise_if_any()
    assert caught.value.render() == (
        "10 problem(s); nothing was imported:\n"
        "  f.csv:1: bad\n  f.csv:2: bad\n  f.csv:3: bad\n"
        "  … and 7 more"
    )


def test_it_caps_an_error_built_from_a_long_list():
    error = InputError([Problem("f", n, None, "bad") for n in range(1, MAX_PROBLEMS + 51)])
    assert len(error.problems) == MAX_PROBLEMS and error.omitted == 50
    assert str(error).endswith("… and 50 more")


def test_it_merges_collectors_in_order_with_their_omitted_counts():
    maps, main = Collector("map.csv", limit=1), Collector("responses.csv")
    maps.add("one", line=1)
    maps.add("two", line=2)
    main.add("three", line=3)
    report = Collector("responses.csv")
    for collected in (maps, main):
        report.extend(collected)
    assert [str(p) for p in report.problems] == ["map.csv:1: one", "responses.csv:3: three"]
    assert report.count == 3


def test_it_names_another_file_when_told():
    errors = Collector("gold.conll")
    errors.add("too big", file="sys.conll")
    assert str(errors.problems[0]) == "sys.conll: too big"


def test_an_empty_collector_raises_nothing():
    errors = Collector("f.csv")
    assert not errors
    errors.raise_if_any()
