"""A file read a chunk at a time (`core.tabular.TextFile`) reads as its whole text does.

The import of ten million answers reads its 260 MB file this way, so that memory does not grow
with the file: every line, every problem and every message must be those of `decode` and
`stream_grid` on the whole text, wherever the chunks are cut (here every few bytes).
"""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.problems import Collector
from core.tabular import TextFile, _lines, decode, open_text, stream_grid


@pytest.fixture(autouse=True)
def _small_chunks(monkeypatch):
    monkeypatch.setattr(TextFile, "CHUNK", 5)  # cut inside lines, characters and line endings


def opened(data: bytes, max_bytes: int = 10**6):
    errors = Collector("f.csv")
    return open_text(io.BytesIO(data), errors, max_bytes=max_bytes), errors


def messages(errors):
    return [str(p) for p in errors.problems]


def whole(data: bytes, max_bytes: int = 10**6):
    errors = Collector("f.csv")
    return decode(data, errors, max_bytes=max_bytes), errors


def rows(text, errors):
    grid = stream_grid(text, filename="f.csv", errors=errors, min_columns=2)
    return None if grid is None else (grid.header, grid.delimiter, list(grid.rows))


@pytest.mark.parametrize("text", [
    "a,b\n1,2\n", "a,b\r\n1,2\r\n3,4", "a;b\r1;2\r", "a,b\n\n\n1,é\n", "a,b\n\"x\ny\",2\n",
    "\ufeffa,b\n1,€\r\n", "a,b\n1,2", "a\tb\n😀,2\n",
])
def test_its_lines_and_rows_are_those_of_the_whole_text(text):
    data = text.encode()
    streamed, errors = opened(data)
    assert streamed is not None
    decoded, whole_errors = whole(data)
    assert "".join(streamed.lines()) == decoded
    assert list(opened(data)[0].lines()) == list(_lines(decoded))
    assert rows(opened(data)[0], errors) == rows(decoded, whole_errors)
    assert messages(errors) == messages(whole_errors)


@given(st.lists(st.lists(st.text(alphabet=st.sampled_from('ab,;"é😀\r\n\0 '), max_size=6),
                         min_size=1, max_size=4), min_size=1, max_size=6),
       st.sampled_from(["\n", "\r\n", "\r"]), st.integers(1, 9))
@settings(max_examples=150, deadline=None)
def test_any_file_cut_anywhere_reads_as_its_whole_text(records, ending, chunk):
    TextFile.CHUNK = chunk  # the fixture restores it
    data = ending.join(",".join(cells) for cells in records).encode()
    streamed, errors = opened(data)
    decoded, whole_errors = whole(data)
    if decoded is None:
        assert streamed is None and messages(errors) == messages(whole_errors)
        return
    assert streamed is not None
    assert rows(streamed, errors) == rows(decoded, whole_errors)
    assert messages(errors) == messages(whole_errors)  # a NUL is reported on its cell, too


@pytest.mark.parametrize("data", [
    "id,text\nx,caf\u00e9\n".encode("cp1252"),  # the file looks Windows-1252
    b"id,text\nx,ok\ny,\x81\x8d\xff\n",  # not even that
    b"a,b\n" * 7 + b"1,\xe9t\xe9\n",  # after several chunks
])
def test_a_byte_that_is_not_utf8_is_named_at_its_line_and_column_like_decode(data):
    streamed, errors = opened(data)
    assert streamed is not None  # found while reading, after the lines before it
    grid = stream_grid(streamed, filename="f.csv", errors=errors)
    assert grid is not None and grid.header in (["id", "text"], ["a", "b"])
    read = list(grid.rows)
    assert len(read) == data.count(b"\n") - 2  # the lines before the byte's
    _, whole_errors = whole(data)
    assert messages(errors) == messages(whole_errors) and len(messages(errors)) == 1


def test_it_refuses_utf16_an_empty_file_and_one_over_the_limit_as_decode_does():
    for data, limit in [("id,text\n".encode("utf-16"), 10**6), (b"", 10**6),
                        ("\ufeff".encode(), 10**6), (b"x" * 2_000_001, 1_000_000)]:
        streamed, errors = opened(data, limit)
        assert streamed is None
        assert messages(errors) == messages(whole(data, limit)[1])


def test_it_holds_a_chunk_not_the_file():
    """What it keeps: the chunk being read and the lines not yet yielded, not what was read."""
    TextFile.CHUNK = 1 << 10
    data = b"a,b\n" + b"1,2\n" * 100_000
    streamed, _ = opened(data)
    assert streamed is not None and len(streamed.head) <= 1 << 10
    lines = streamed.lines()
    for _ in range(50_000):
        next(lines)
    frame = lines.gi_frame
    held = sum(len(v) for v in frame.f_locals.values() if isinstance(v, (bytes, str)))
    assert held <= 4 << 10
