"""The pure reader of methods bundles: safe zip members and the revisions file, every problem
named by file, line and column (no database)."""

from __future__ import annotations

import io
import zipfile

import pytest

from core.bundles import ZipLimits, bundle_members, revisions_parse
from core.problems import InputError

HEADER = "annotator,item,presentation,position,revision,current,question,value,missing,comment," \
         "active_ms,submitted_at,source\r\n"
QUESTIONS = {"rating": (1, 2, 3, 4, 5)}


def zipped(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, body in members.items():
            archive.writestr(name, body)
    return out.getvalue()


def parse(rows: str):
    return revisions_parse((HEADER + rows).encode(), filename="revisions.csv",
                           items={"i1", "i2"}, questions=QUESTIONS, max_bytes=10**6)


def problems(rows: str) -> str:
    with pytest.raises(InputError) as caught:
        parse(rows)
    return caught.value.render()


def test_it_returns_the_wanted_members_and_ignores_the_others():
    data = zipped({"items.csv": b"id\r\n", "notes.txt": b"x", "sub/items.csv": b"y"})
    assert bundle_members(data, filename="b.zip", wanted={"items.csv"}) == {"items.csv": b"id\r\n"}


@pytest.mark.parametrize(("name", "why"), [
    ("..\\evil", "a backslash"), ("a/../../evil", "'..'"), ("/abs", "an absolute path"),
    ("C:/win", "an absolute path"),
])
def test_it_refuses_a_member_name_out_of_the_archive(name, why):
    with pytest.raises(InputError, match=why):
        bundle_members(zipped({name: b"x"}), filename="b.zip", wanted=set())


def test_it_refuses_members_that_unpack_to_more_than_the_limit_without_reading_them():
    data = zipped({"a": b"0" * 100_000, "b": b"0" * 100_000})
    limits = ZipLimits(max_member_bytes=150_000, max_total_bytes=150_000)
    with pytest.raises(InputError) as caught:
        bundle_members(data, filename="b.zip", wanted={"a"}, limits=limits)
    assert "b.zip: the members unpack to 200000 bytes, more than the 150000 allowed" in str(
        caught.value)


def test_it_names_a_missing_member():
    with pytest.raises(InputError, match="b.zip: revisions.csv is missing"):
        bundle_members(zipped({"items.csv": b""}), filename="b.zip", wanted={"revisions.csv"},
                       required={"revisions.csv"})


def test_it_reads_revisions_in_order_with_position_zero_and_times():
    presented = parse("A1,i1,1,0,1,0,rating,2,,,900,t,app\r\n"
                      "A1,i1,1,0,2,1,rating,,cant_judge,why,50,t,app\r\n"
                      "A2,i2,1,,1,1,rating,5,,,,t,import\r\n")
    first, second = presented
    assert (first.annotator, first.item, first.position) == ("A1", "i1", 0)
    assert [(r.number, r.current, r.active_ms) for r in first.revisions] == [
        (1, False, 900), (2, True, 50)]
    assert first.revisions[1].cells["rating"].missing == "cant_judge"
    assert (second.position, second.first.active_ms, second.first.source) == (None, None,
                                                                             "import")


def test_it_names_each_bad_cell_by_line_and_column():
    message = problems("B1,i1,1,0,1,1,rating,2,,,1,t,app\r\n"
                       "A1,i9,1,0,1,1,rating,2,,,1,t,app\r\n"
                       "A1,i1,1,0,1,1,rating,7,,,1,t,app\r\n"
                       "A1,i1,1,0,1,1,rating,2,skipped,,1,t,app\r\n"
                       "A1,i1,1,x,1,1,rating,2,,,1,t,web\r\n")
    assert "revisions.csv:2: column annotator: 'B1' is not a pseudonym" in message
    assert "revisions.csv:3: column item: 'i9' is not an item" in message
    assert "revisions.csv:4: column value: '7' is not a value of the question's scale" in message
    assert "revisions.csv:5: column missing: a value and a missing reason (skipped)" in message
    assert "revisions.csv:6: column position: 'x' is not a whole number" in message
    assert "revisions.csv:6: column source: 'web' is not a source" in message


def test_it_needs_one_current_revision_numbered_from_one():
    message = problems("A1,i1,1,0,1,1,rating,2,,,1,t,app\r\n"
                       "A1,i1,1,0,3,1,rating,2,,,1,t,app\r\n")
    assert "revisions [1, 3] of A1's presentation 1 of 'i1'" in message
    assert "has 2 current revisions; exactly one" in message


def test_it_refuses_a_position_used_by_two_items():
    message = problems("A1,i1,1,4,1,1,rating,2,,,1,t,app\r\n"
                       "A1,i2,1,4,1,1,rating,2,,,1,t,app\r\n")
    assert "revisions.csv:3: column position: position 4 of A1 is already used on line 2" in message




def test_it_refuses_a_member_of_zeros_after_its_first_megabyte():
    # issue 23, point 17: 200 MB of zeros were unpacked and parsed (11 s) before the refusal.
    zeros = b"\x00" * (40 * 1024 * 1024)
    limits = ZipLimits(max_member_bytes=len(zeros), max_total_bytes=len(zeros))
    with pytest.raises(InputError, match="items.csv: the member is not text: it holds a NUL"):
        bundle_members(zipped({"items.csv": zeros}), filename="b.zip", wanted={"items.csv"},
                       limits=limits)


def test_it_refuses_a_line_longer_than_the_limit_as_it_unpacks():
    limits = ZipLimits(max_line_bytes=1000)
    fine = b"".join(b"x" * 999 + b"\n" for _ in range(3000))  # lines across chunk borders
    assert bundle_members(zipped({"items.csv": fine}), filename="b.zip", wanted={"items.csv"},
                          limits=limits) == {"items.csv": fine}
    for long in (b"id\n" + b" " * 5000 + b"\n", b"id\n" + b" " * 3_000_000,
                 b"x" * 999 + b"\n" + b"y" * (1024 * 1024 - 1000) + b"y" * 5 + b"\n"):
        with pytest.raises(InputError, match="a line longer than 1000 bytes"):
            bundle_members(zipped({"items.csv": long}), filename="b.zip", wanted={"items.csv"},
                           limits=limits)
