"""The CSV cell neutraliser and the pure export writers (no database)."""

import csv
import io
import json
import math
import re
import zipfile

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from core.formats import (
    FORMULA_STARTS,
    csv_chunks,
    format_number,
    jsonl_chunks,
    neutralise,
    parquet_chunks,
    unneutralise,
    zip_chunks,
)

DANGEROUS = st.sampled_from(FORMULA_STARTS)
NUMBERS = st.one_of(st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                    st.booleans(), st.none())
# Any text a cell may hold: every control character, quotes, the dangerous characters, unicode.
TEXT = st.text(st.characters(codec="utf-8"), max_size=30)


def plain_number(text: str) -> bool:
    return re.fullmatch(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", text) is not None


@given(DANGEROUS, TEXT)
def test_it_prefixes_every_dangerous_first_character(first, rest):
    text = first + rest
    assert neutralise(text) == (text if plain_number(text) else "'" + text)


@given(st.integers(0, 3), DANGEROUS, TEXT.filter(lambda t: not plain_number("-" + t)))
def test_it_prefixes_a_dangerous_character_after_leading_quotes(quotes, first, rest):
    text = "'" * quotes + first + rest
    assert neutralise(text) == "'" + text


@given(TEXT.filter(lambda t: t.lstrip("'")[:1] not in FORMULA_STARTS))
def test_it_leaves_other_text_alone(text):
    assert neutralise(text) == text


@given(NUMBERS | st.floats())
def test_it_never_touches_numbers_or_none(value):
    assert neutralise(value) is value


def test_it_keeps_a_negative_number_and_neutralises_the_same_as_text():
    assert neutralise(-1) == -1 and neutralise(-2.5) == -2.5
    # A plain signed number, as a number or as text, is read as a number, never run: a label
    # column of codes -1, 0, 1 stays uniform. Anything more is a formula.
    for number in ("-1", "+1", "-0.5", "+.5", "-1e3", "+2.5E-4"):
        assert neutralise(number) == number and unneutralise(number) == number
    for formula in ("-2+3", "-1-1", "+1)", "-1 ", "- 1", "-1e3+cmd", "-", "+"):
        assert neutralise(formula) == "'" + formula


@given(TEXT)
def test_unneutralise_undoes_neutralise(text):
    assert unneutralise(neutralise(text)) == text


@given(TEXT)
def test_a_neutralised_cell_never_starts_with_a_formula_character(text):
    cell = neutralise(text)
    assert cell[:1] not in FORMULA_STARTS or plain_number(cell)


def test_it_round_trips_text_that_really_starts_with_a_quote():
    assert neutralise("'=1") == "''=1" and unneutralise("''=1") == "'=1"
    assert neutralise("'hello") == "'hello" and unneutralise("'hello") == "'hello"
    assert neutralise("'") == "'" and unneutralise("'") == "'"


def test_it_neutralises_the_classic_injections():
    for text in ('=HYPERLINK("http://x","y")', "@SUM(1)", "+1+1", "-2+3", "\tx", "\rx", "\0x",
                 "=cmd|' /C calc'!A0"):
        assert neutralise(text) == "'" + text


@given(st.floats(allow_nan=False, allow_infinity=False) | st.integers(-(2**63), 2**63))
def test_a_number_is_written_exactly(number):
    assert float(format_number(number)) == float(number)


def test_it_refuses_a_non_finite_number():
    for bad in (math.nan, math.inf):
        try:
            format_number(bad)
        except ValueError:
            continue
        raise AssertionError(f"{bad} was written")


def read_csv(data: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(data.decode(), newline="")))


@given(st.lists(st.tuples(TEXT, NUMBERS), max_size=20))
@settings(max_examples=200)
def test_csv_cells_round_trip_through_unneutralise(rows):
    data = b"".join(csv_chunks(["text", "number"], rows, chunk_bytes=64))
    back = read_csv(data)
    assert back[0] == ["text", "number"]
    assert len(back) == len(rows) + 1
    for (text, number), (cell, raw) in zip(rows, back[1:], strict=True):
        assert unneutralise(cell) == text
        assert cell[:1] not in FORMULA_STARTS or plain_number(cell)
        if number is None:
            assert raw == ""
        elif isinstance(number, bool):
            assert raw == str(int(number))
        else:
            assert float(raw) == float(number)  # never prefixed: a number is not a formula


def test_csv_writes_a_negative_value_as_a_bare_number():
    data = b"".join(csv_chunks(["item", "value"], [("-2+3", -1), ("x", -1.5)]))
    assert data == b"item,value\r\n'-2+3,-1\r\nx,-1.5\r\n"


RECORD = st.fixed_dictionaries({
    "text": TEXT,
    "value": st.none() | st.floats(allow_nan=False, allow_infinity=False) | st.integers(-(2**53), 2**53),
    "flag": st.booleans(),
})


@given(st.lists(RECORD, max_size=20))
@settings(max_examples=200)
def test_jsonl_round_trips_exactly(records):
    data = b"".join(jsonl_chunks(records, chunk_bytes=64))
    lines = data.decode().splitlines()  # also splits on U+2028, NEL, …: none may be raw
    assert [json.loads(line) for line in lines] == records


def test_jsonl_keeps_formulas_and_unicode_as_they_are():
    records = [{"text": '=HYPERLINK("http://x","y")'}, {"text": "héllo\u2028wörld\t\0"}]
    data = b"".join(jsonl_chunks(records))
    assert "héllo".encode() in data
    assert [json.loads(line) for line in data.splitlines()] == records


SCHEMA = pa.schema([
    pa.field("text", pa.string(), nullable=False),
    pa.field("value", pa.float64()),
    pa.field("count", pa.int64()),
    pa.field("flag", pa.bool_(), nullable=False),
])
ROW = st.tuples(TEXT, st.none() | st.floats(allow_nan=False), st.none() | st.integers(-(2**63), 2**63 - 1),
                st.booleans())


@given(st.lists(ROW, max_size=30), st.integers(1, 7))
@settings(max_examples=100, deadline=None)
def test_parquet_round_trips_exactly(rows, batch_rows):
    data = b"".join(parquet_chunks(SCHEMA, rows, batch_rows=batch_rows))
    table = pq.read_table(io.BytesIO(data))
    assert table.schema.equals(SCHEMA)
    assert [tuple(r.values()) for r in table.to_pylist()] == rows
    expected_groups = -(-len(rows) // batch_rows)
    assert pq.ParquetFile(io.BytesIO(data)).num_row_groups == expected_groups


def test_parquet_streams_one_row_group_at_a_time():
    rows = [(f"t{n}", float(n), n, n % 2 == 0) for n in range(1000)]
    chunks = list(parquet_chunks(SCHEMA, iter(rows), batch_rows=100))
    assert len(chunks) >= 10  # bytes leave after each row group, not at the end
    assert pq.read_table(io.BytesIO(b"".join(chunks))).num_rows == 1000


def test_zip_streams_its_members():
    members = [("a.csv", lambda: [b"x" * 100_000, b"y"]), ("b.txt", lambda: [b"hello"])]
    data = b"".join(zip_chunks(members))
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert archive.namelist() == ["a.csv", "b.txt"]
        assert archive.read("a.csv") == b"x" * 100_000 + b"y"
        assert archive.testzip() is None
