"""The one atomic file write: a file is whole or absent, never half written."""

import os
import stat

import pytest

from core.files import atomic_write, partial_name


def test_it_writes_the_chunks_and_returns_the_size(tmp_path):
    target = tmp_path / "out.csv"
    assert atomic_write(target, iter([b"a,b\r\n", b"", b"1,2\r\n"])) == 10
    assert target.read_bytes() == b"a,b\r\n1,2\r\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]


def test_it_replaces_an_existing_file_whole(tmp_path):
    target = tmp_path / "out.csv"
    target.write_bytes(b"old")
    atomic_write(target, [b"new"])
    assert target.read_bytes() == b"new"


def test_a_failure_midway_keeps_the_old_file_and_leaves_no_partial(tmp_path):
    target = tmp_path / "out.csv"
    target.write_bytes(b"the previous export\n")

    def chunks():
        yield b"half"
        raise RuntimeError("the disk is on fire")

    with pytest.raises(RuntimeError):
        atomic_write(target, chunks())
    assert target.read_bytes() == b"the previous export\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]


def test_the_partial_file_matches_its_glob_while_it_is_written(tmp_path):
    target = tmp_path / "1-study-responses.csv"
    seen = []

    def chunks():
        seen.extend(p.name for p in tmp_path.glob(partial_name(target)))
        yield b"x"

    atomic_write(target, chunks())
    assert len(seen) == 1 and seen[0].startswith(".1-study-responses.csv.")


def test_the_file_is_readable_by_others_less_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        atomic_write(tmp_path / "out.csv", [b"x"])
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "out.csv").stat().st_mode) == 0o640
