"""core.comparative: the stored form of pairwise, ranking and best–worst judgments."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.comparative import (
    JudgmentError,
    judgment_clean,
    judgment_from_text,
    judgment_text,
    options_clean,
    shown_order,
)


def test_pairwise_value_is_the_canonical_index_not_the_side() -> None:
    value, choice = judgment_clean("pairwise", {}, ["a", "b"], {"shown": ["b", "a"], "pick": "a"})
    assert value == 0.0 and choice == {"shown": ["b", "a"], "pick": "a", "strength": ""}


def test_pairwise_tie_and_strength_follow_the_options() -> None:
    with pytest.raises(JudgmentError, match="no tie"):
        judgment_clean("pairwise", {}, ["a", "b"], {"shown": ["a", "b"], "pick": "tie"})
    assert judgment_clean("pairwise", {"ties": True}, ["a", "b"],
                          {"shown": ["a", "b"], "pick": "tie"})[0] == 0.5
    with pytest.raises(JudgmentError, match="no strength"):
        judgment_clean("pairwise", {}, ["a", "b"],
                       {"shown": ["a", "b"], "pick": "a", "strength": "much"})
    _, choice = judgment_clean("pairwise", {"strength": True}, ["a", "b"],
                               {"shown": ["a", "b"], "pick": "b", "strength": "much"})
    assert choice["strength"] == "much"


@pytest.mark.parametrize("raw, message", [
    ({"shown": ["a"], "pick": "a"}, "each once"),
    ({"shown": ["a", "c"], "pick": "a"}, "each once"),
    ({"shown": ["a", "b"], "pick": "c"}, "not one of the outputs"),
    ({"shown": "ab", "pick": "a"}, "order shown"),
    (3, "not a value"),
])
def test_bad_pairwise_judgments_are_named(raw: object, message: str) -> None:
    with pytest.raises(JudgmentError, match=message):
        judgment_clean("pairwise", {}, ["a", "b"], raw)


def test_ranking_with_and_without_ties() -> None:
    outputs = ["a", "b", "c"]
    value, choice = judgment_clean("ranking", {}, outputs,
                                   {"shown": ["c", "a", "b"], "order": ["b", "a", "c"]})
    assert value == 1.0 and choice["order"] == [["b"], ["a"], ["c"]]
    with pytest.raises(JudgmentError, match="no tie"):
        judgment_clean("ranking", {}, outputs, {"shown": outputs, "order": [["a", "b"], ["c"]]})
    with pytest.raises(JudgmentError, match="every output"):
        judgment_clean("ranking", {}, outputs, {"shown": outputs, "order": ["a", "b"]})
    assert judgment_clean("ranking", {"ties": True}, outputs,
                          {"shown": outputs, "order": [["a", "b"], ["c"]]})[0] == 0.0


def test_bws_needs_two_different_outputs() -> None:
    outputs = ["a", "b", "c", "d"]
    assert judgment_clean("bws", {}, outputs,
                          {"shown": outputs, "best": "c", "worst": "a"})[0] == 2.0
    with pytest.raises(JudgmentError, match="two different"):
        judgment_clean("bws", {}, outputs, {"shown": outputs, "best": "a", "worst": "a"})


def test_options_are_checked_by_name() -> None:
    assert options_clean("bws", None) == {"size": 4}
    with pytest.raises(JudgmentError, match="no option 'ties'"):
        options_clean("bws", {"ties": True})
    with pytest.raises(JudgmentError, match="size"):
        options_clean("bws", {"size": 12})
    with pytest.raises(JudgmentError, match="true or false"):
        options_clean("pairwise", {"ties": "yes"})
    with pytest.raises(JudgmentError, match="kind"):
        options_clean("scale", {})


def test_long_file_text_round_trips() -> None:
    shown = ["a", "b", "c", "d"]
    for kind, options, text in [("pairwise", {"ties": True}, "tie"), ("pairwise", {}, "b"),
                                ("ranking", {"ties": True}, "c|a=d|b"), ("bws", {}, "d|b")]:
        sh = shown[:2] if kind == "pairwise" else shown
        _, choice = judgment_from_text(kind, options, sh, text)
        assert judgment_text(choice) == text


@given(st.lists(st.text(min_size=1, max_size=5), min_size=2, max_size=8, unique=True),
       st.text(max_size=10))
def test_shown_order_is_a_stable_permutation(outputs: list[str], key: str) -> None:
    order = shown_order(outputs, key)
    assert sorted(order) == sorted(outputs) and order == shown_order(outputs, key)


def test_shown_order_varies_between_participants() -> None:
    firsts = {shown_order(["a", "b"], f"{p}:7")[0] for p in range(40)}
    assert firsts == {"a", "b"}


def test_a_question_is_asked_of_the_comparisons_it_can_judge() -> None:
    from core.comparative import asks
    assert asks("scale", 0) and not asks("scale", 2)
    assert asks("pairwise", 2) and not asks("pairwise", 4) and not asks("pairwise", 0)
    assert asks("bws", 4) and not asks("bws", 2)
    assert asks("ranking", 2) and asks("ranking", 8) and not asks("ranking", 9)
