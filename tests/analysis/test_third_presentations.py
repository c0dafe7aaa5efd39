"""A third presentation of an item imports and analyses: duplicate consistency pairs the first two,
the third is stored and counted, in no statistic (docs/statistics/duplicates.md)."""

import io
import json

import pytest
from django.core.management import call_command

from analysis.annotator import annotator_page
from analysis.selectors import annotator_answers
from annotation.models import Response
from studies.models import Participant

pytestmark = pytest.mark.django_db

ITEMS = "id,text\n" + "".join(f"p{n},Passage {n}: [Marie] met [her] brother.\n"
                              for n in range(1, 5))
# w is shown p1 three times (positions 1, 3 and 5: answers 2, 5 and 0); v twice, u once.
ANSWERS = """annotator,item,value,position
w,p1,2,1
w,p2,3,2
w,p1,5,3
w,p3,4,4
w,p1,0,5
w,p4,6,6
v,p1,2,1
v,p2,4,2
v,p3,5,3
v,p1,2,4
v,p4,6,5
u,p1,1,1
u,p2,3,2
u,p3,4,3
u,p4,7,4
"""


def import_file(study, path) -> str:
    """Import a long file with the command; return what it says on standard error."""
    err = io.StringIO()
    call_command("import_responses", study.slug, str(path), "--format", "long", stderr=err)
    return err.getvalue()


@pytest.fixture
def imported(alice, make_study, tmp_path):
    study = make_study(alice, slug="thrice", items=ITEMS)
    path = tmp_path / "answers.csv"
    path.write_text(ANSWERS)
    study.said = import_file(study, path)
    return study


def test_the_import_says_that_the_analysis_uses_the_first_two_presentations(imported):
    assert "1 answered presentation of an item after the annotator's second" in imported.said
    assert "uses only the first two presentations" in imported.said


def test_it_imports_a_third_presentation_and_analyses_the_first_two(imported, tmp_path):
    stored = dict(Response.objects.filter(
        participant__external_id="w", item__external_id="p1").values_list(
        "presentation", "answers__value"))
    assert stored == {1: 2, 2: 5, 3: 0}
    out = tmp_path / "r.json"
    call_command("analyze", imported.slug, "--output", str(out))
    document = json.loads(out.read_text())
    assert document["counts"]["later_presentations"] == 1
    assert document["counts"]["duplicate_pairs"] == 2  # w's p1 and v's p1
    assert document["counts"]["responses"] == 12  # first presentations only
    w = document["annotators"][0]  # the first annotator in the file
    raw = {d["annotator"]: d for d in document["duplicates"] if d["scale"] == "raw"}
    # w's pair is (2, 5), the third answer (0) is left out: |2 - 5| = 3.
    assert (raw[w]["pairs"], raw[w]["exact_agreement"], raw[w]["mean_abs_diff"]) == (1, 0.0, 3.0)


def test_the_annotator_page_pairs_the_first_two_presentations(imported, tmp_path):
    out = tmp_path / "r.json"
    call_command("analyze", imported.slug, "--output", str(out))
    document = json.loads(out.read_text())
    w = Participant.objects.get(study=imported, external_id="w")
    page = annotator_page(document, name=document["annotators"][0], question=None, scale="raw",
                          answers=annotator_answers(participant_id=w.pk))
    assert page.pairs == [("p1", 2.0, 5.0)]


def test_a_study_without_a_third_presentation_counts_none(alice, make_study, tmp_path):
    study = make_study(alice, slug="twice", items=ITEMS)
    path = tmp_path / "answers.csv"
    path.write_text("".join(line + "\n" for line in ANSWERS.splitlines() if line != "w,p1,0,5"))
    assert import_file(study, path) == ""
    out = tmp_path / "r.json"
    call_command("analyze", study.slug, "--output", str(out))
    assert json.loads(out.read_text())["counts"]["later_presentations"] == 0
