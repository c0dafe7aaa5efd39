"""A third presentation in a response file is accepted, numbered and said (no database)."""

from core.responses import later_presentations, responses_parse

WIDE = b"id,p1,p2,p1,p1\nw,2,3,5,0\nv,1,4,,\n"


def parse(data: bytes, warnings: list[str]):
    return responses_parse(data, filename="r.csv", fmt="wide", items=["p1", "p2"],
                           scale=[0, 1, 2, 3, 4, 5, 6, 7], annotator_column="id",
                           max_bytes=10_000, warnings=warnings)


def test_it_numbers_the_third_column_of_an_item_presentation_3():
    w, _ = parse(WIDE, [])
    assert sorted((x.item, x.presentation) for x in w.answers.values()) == [
        ("p1", 1), ("p1", 2), ("p1", 3), ("p2", 1)]


def test_it_warns_once_for_the_answered_presentations_after_the_second():
    warnings: list[str] = []
    parse(WIDE, warnings)  # v left their third p1 blank: only w's counts
    assert warnings == later_presentations(1)
    assert "the analysis uses only the first two presentations" in warnings[0]


def test_it_says_nothing_without_a_third_presentation():
    warnings: list[str] = []
    parse(b"id,p1,p2,p1\nw,2,3,5\n", warnings)
    assert warnings == [] and later_presentations(0) == []
