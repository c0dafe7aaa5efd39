"""Definition files: every problem at once, under the file's name, with its line."""

import pytest

from core.problems import InputError
from studies.definitions import load_definition

TOML = """\
slug = "Bad Slug!"
title = "A study"
preset = "similarity-1-5"
colour = "blue"

[design]
annotators_per_item = 2
seed = "seven"
"""

JSON = """{
  "slug": "UPPER",
  "title": "A study",
  "preset": "similarity-1-5",
  "design": {
    "seed": -1.5
  }
}
"""


def problems(text: str, name: str) -> list[tuple]:
    with pytest.raises(InputError) as caught:
        load_definition(text.encode(), name)
    return [(p.file, p.line, p.column) for p in caught.value.problems]


def test_every_problem_of_a_toml_definition_has_its_line_and_the_files_name():
    found = problems(TOML, "study.toml")
    assert ("study.toml", 1, "slug") in found  # reported with the rest, not after them
    assert ("study.toml", 4, "colour") in found
    assert ("study.toml", 8, "design.seed") in found


def test_every_problem_of_a_json_definition_has_its_line():
    found = problems(JSON, "study.json")
    assert ("study.json", 2, "slug") in found
    assert ("study.json", 6, "design.seed") in found


def test_a_good_slug_passes():
    assert load_definition(TOML.replace("Bad Slug!", "good-slug").replace('colour = "blue"\n', "")
                           .replace('seed = "seven"', "seed = 7").encode(),
                           "study.toml")["slug"] == "good-slug"
