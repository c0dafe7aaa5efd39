"""The column mapper of a wide file: what it guesses from headers, and the import options (and
the problems, each naming its column) it makes of the researcher's choices (issue 23, point 5)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.problems import InputError
from core.responses import Upload, responses_parse
from core.responses.columns import USES, ColumnChoice, columns_guess, columns_mapping

ITEMS = {"p1": "The cat sat on the mat all day long.", "p2": "A dog barked twice at dawn today."}
HEADER = ["Timestamp", "Email address", "Your name",
          "Rate passage p1 [Fluency]", "Rate passage p1 [Adequacy]",
          "How good is: The cat sat on the mat all day long. [Fluency]", ""]
QUESTIONS = {"fluency": "Fluency", "adequacy": "Is the meaning kept?"}


def uses(choices):
    return [(c.use, c.item, c.question) for c in choices]


def test_it_guesses_annotator_meta_private_items_questions_and_repeats():
    assert uses(columns_guess(HEADER, items=ITEMS, questions=QUESTIONS)) == [
        ("meta", "", ""), ("annotator", "", ""), ("ignore", "", ""),
        ("item", "p1", "fluency"), ("item", "p1", "adequacy"),
        ("repeat", "p1", "fluency"), ("ignore", "", "")]


def test_it_guesses_no_item_when_a_header_names_two():
    assert columns_guess(["p1 or p2"], items=ITEMS, questions={"q": ""})[0].use == "meta"


def test_item_colon_question_headers_are_read_as_the_import_reads_them():
    guessed = columns_guess(["p2:adequacy"], items=ITEMS, questions=QUESTIONS)
    assert uses(guessed) == [("item", "p2", "adequacy")]


def mapping(choices, header=HEADER, questions=("fluency", "adequacy")):
    return columns_mapping(header, choices, items=set(ITEMS), questions=list(questions),
                           filename="form.csv")


def test_the_guessed_mapping_is_the_item_map_a_hand_made_csv_gives():
    got = mapping(columns_guess(HEADER, items=ITEMS, questions=QUESTIONS))
    assert got.annotator_column == "Email address"
    assert got.meta_columns == ("Timestamp",)
    assert got.ignore_columns == ("Your name", "")
    assert got.item_map == {
        "Rate passage p1 [Fluency]": "p1:fluency", "Rate passage p1 [Adequacy]": "p1:adequacy",
        "How good is: The cat sat on the mat all day long. [Fluency]": "p1:fluency"}


def problems(choices, **kw):
    with pytest.raises(InputError) as caught:
        mapping(choices, **kw)
    return [(p.column, p.message) for p in caught.value.problems]


def test_an_item_and_question_twice_names_both_columns_and_the_way_out():
    choices = columns_guess(HEADER, items=ITEMS, questions=QUESTIONS)
    choices[5] = ColumnChoice("item", "p1", "fluency")
    [(column, message)] = problems(choices)
    assert column == 6 and "column 6 'How good is" in message and "column 4" in message
    assert "item p1, question fluency" in message and "repeat" in message


def test_no_annotator_column_is_said():
    choices = [ColumnChoice("meta"), ColumnChoice("meta"), ColumnChoice("ignore"),
               ColumnChoice("item", "p1", "fluency"), ColumnChoice("ignore"),
               ColumnChoice("ignore"), ColumnChoice("ignore")]
    assert [m for _, m in problems(choices)] == [
        "no column is the annotator id: choose “the annotator id” for the column that tells "
        "respondents apart (an e-mail address, a platform id)"]


def test_every_problem_names_its_column():
    choices = [ColumnChoice("annotator"), ColumnChoice("annotator"), ColumnChoice("bogus"),
               ColumnChoice("item", "p9", "fluency"), ColumnChoice("item", "p1", ""),
               ColumnChoice("repeat", "p2", "fluency"), ColumnChoice("meta")]
    got = problems(choices)
    assert [c for c, _ in got] == [3, 4, 5, 6, 7, 2]
    assert "column 3 'Your name': choose what the column is" in got[0][1]
    assert "'p9' is not an item of this study" in got[1][1]
    assert "choose the question it answers (fluency, adequacy)" in got[2][1]
    assert "is a repeat of item p2, question fluency, but no earlier column" in got[3][1]
    assert "column 7 has no header" in got[4][1]
    assert "column 2 'Email address' and column 1 are both the annotator id" in got[5][1]


def test_columns_sharing_a_header_must_be_mapped_alike():
    header = ["id", "Q", "Q"]
    choices = [ColumnChoice("annotator"), ColumnChoice("item", "p1"), ColumnChoice("item", "p2")]
    [(column, message)] = problems(choices, header=header, questions=("q",))
    assert column == 3 and "same header as column 2" in message
    ok = [ColumnChoice("annotator"), ColumnChoice("item", "p1"), ColumnChoice("repeat", "p1")]
    assert mapping(ok, header=header, questions=("q",)).item_map == {"Q": "p1"}


def test_the_mapping_imports_like_the_hand_made_item_map():
    """The file parses the same with the mapper's options as with a CSV item map."""
    header = ["Timestamp", "Email address", "Your name", "Rate A [Fluency]", "Rate A [Adequacy]",
              "Rate A [Fluency]"]
    data = (",".join(f'"{h}"' for h in header) + "\n"
            "2026-01-01,a@x.org,Ann,4,3,5\n2026-01-02,b@x.org,Bob,2,,1\n").encode()
    choices = [ColumnChoice("meta"), ColumnChoice("annotator"), ColumnChoice("ignore"),
               ColumnChoice("item", "p1", "fluency"), ColumnChoice("item", "p1", "adequacy"),
               ColumnChoice("repeat", "p1", "fluency")]
    got = mapping(choices, header=header)
    scales = {"fluency": range(1, 6), "adequacy": range(1, 6)}
    kw = {"filename": "f.csv", "fmt": "wide", "items": ITEMS, "questions": scales,
          "max_bytes": 10**6}
    mapped = responses_parse(data, annotator_column=got.annotator_column, item_map=got.item_map,
                             meta_columns=got.meta_columns, ignore_columns=got.ignore_columns,
                             **kw)
    csv_map = Upload("map.csv", b'column,item\n"Rate A [Fluency]",p1:fluency\n'
                                b'"Rate A [Adequacy]",p1:adequacy\n')
    by_hand = responses_parse(data, annotator_column="Email address", item_map=csv_map,
                              meta_columns=["Timestamp"], ignore_columns=["Your name"], **kw)
    assert mapped == by_hand
    first = mapped[0]
    assert first.meta == {"Timestamp": "2026-01-01"}
    assert {k: {q: c.value for q, c in a.cells.items()} for k, a in first.answers.items()} == {
        ("p1", 1): {"fluency": 4.0, "adequacy": 3.0}, ("p1", 2): {"fluency": 5.0}}


def test_a_hand_made_map_naming_an_unknown_question_is_a_problem():
    data = b"id,Rate A\na,4\n"
    with pytest.raises(InputError) as caught:
        responses_parse(data, filename="f.csv", fmt="wide", items=ITEMS,
                        questions={"fluency": [1, 2, 3, 4]}, annotator_column="id",
                        item_map=Upload("m.csv", b"Rate A,p1:clarity\n"), max_bytes=10**6)
    assert "'p1:clarity': 'clarity' is not a question of this study" in str(caught.value)



_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=30)


@settings(max_examples=200, deadline=None)
@given(header=st.lists(st.one_of(_TEXT, st.sampled_from(["p1", "p2:fluency", "Email", ""])),
                       min_size=1, max_size=8),
       picks=st.lists(st.tuples(st.sampled_from([*USES, "", "bogus"]),
                                st.sampled_from(["", "p1", "p2", "x" * 300]),
                                st.sampled_from(["", "fluency", "adequacy", "nope"])),
                      min_size=1, max_size=8))
def test_any_choices_give_a_mapping_or_problems_never_a_crash(header, picks):
    choices = [ColumnChoice(*p) for p in picks]
    try:
        got = mapping(choices, header=header)
    except InputError as exc:
        assert exc.problems and all(p.file == "form.csv" for p in exc.problems)
        return
    # a mapping the import can read: one annotator, every target an item and a question
    assert got.annotator_column in {" ".join(h.split()) for h in header}
    assert all(t.rpartition(":")[0] in ITEMS and t.rpartition(":")[2] in ("fluency", "adequacy")
               for t in got.item_map.values())


@settings(max_examples=200, deadline=None)
@given(header=st.lists(_TEXT, min_size=1, max_size=12))
def test_a_guess_names_at_most_one_annotator_and_only_known_items(header):
    guessed = columns_guess(header, items=ITEMS, questions=QUESTIONS)
    assert len(guessed) == len(header)
    assert sum(c.use == "annotator" for c in guessed) <= 1
    assert all(c.item in ITEMS for c in guessed if c.use in ("item", "repeat"))
