"""A wide response file gets the checks every file gets (no database): a header without rows,
an annotator already imported, answers to a third presentation said. The column mapper's
options (issue 23, point 5) once left the wide branch without them."""

import pytest

from core.problems import InputError
from core.responses import responses_parse


def parse(data: bytes, *, existing=(), warnings=None):
    return responses_parse(data, filename="r.csv", fmt="wide", items=["p1", "p2"],
                           scale=[0, 1, 2, 3, 4, 5, 6, 7], annotator_column="id",
                           max_bytes=10_000, warnings=warnings, existing_annotators=existing)


def test_a_wide_file_with_a_header_and_no_rows_is_refused():
    with pytest.raises(InputError, match="header but no rows"):
        parse(b"id,p1,p2\n")


def test_a_wide_file_naming_an_annotator_already_imported_is_refused():
    with pytest.raises(InputError, match="'w' was already imported"):
        parse(b"id,p1,p2\nw,2,3\n", existing=["w"])


def test_a_wide_file_with_an_ignored_column_still_warns_of_a_third_presentation():
    warnings: list[str] = []
    responses_parse(b"id,name,p1,p1,p1\nw,Zoe,2,3,5\n", filename="r.csv", fmt="wide",
                    items=["p1"], scale=[0, 1, 2, 3, 4, 5, 6, 7], annotator_column="id",
                    max_bytes=10_000, warnings=warnings, ignore_columns=["name"])
    assert len(warnings) == 1 and "presentation 3 or later" in warnings[0]
