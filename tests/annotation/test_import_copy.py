"""The PostgreSQL COPY import stores what the in-memory import stores, and refuses what it refuses.

On PostgreSQL `responses_import` loads long files with COPY (`annotation.bulk`); the in-memory
path (SQLite, wide files) is forced here by patching `_loads_with_copy`, to compare the two on
one database.
The command-line size limit is separate from the browser's on every database.
"""

import io

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from annotation import responses_import as responses_import_module
from annotation.models import Answer, Response
from annotation.services import responses_import
from core.problems import InputError
from studies.models import Participant
from tests.conftest import require

pytestmark = pytest.mark.django_db

ITEMS = "id,text\n" + "".join(f"d{n},Document {n}.\n" for n in range(1, 7))

# Two questions of summeval-4x5 and the two others left out; lines in no particular order:
# ann-b's repeat of d2 (position 9) comes before its first presentation (position 1); a blank
# presentation (ann-c, d5) and an annotator with nothing but one (ann-d); reasons, comments, durations given once per presentation or not.
LONG = """annotator,item,question,value,missing,comment,duration_ms,position,group
ann-b,d2,coherence,4,,,5000,9,x
ann-a,d1,coherence,5,,,1200,0,g1
ann-a,d1,fluency,,cant_judge,,,0,g1
ann-a,d2,coherence,3,,"Too short, really",900,1,
ann-b,d1,coherence,2,,,,0,g2
ann-b,d2,coherence,1,,,700,1,
ann-b,d2,fluency,5,,,800,1,g2
ann-c,d5,coherence,,,,,,
ann-c,d3,relevance,2,,,300,,g3
ann-a,d3,consistency,,skipped,"not sure",,2,
ann-b,d3,fluency,3,,,,3,
ann-d,d4,coherence,,,,,,
"""


def stored(study):
    """Everything an import writes, without database ids, in id order."""
    people = [(*row[:-1], row[-1] is not None) for row in Participant.objects.filter(
        study=study).order_by("pk").values_list(
        "external_id", "meta", "n_assigned", "n_answered", "pseudonym_number", "label", "source",
        "completed_at")]
    responses = list(Response.objects.filter(participant__study=study).order_by("pk").values_list(
        "participant__external_id", "item__external_id", "presentation", "position", "active_ms",
        "revision", "is_current", "source", "events", "assignment_id"))
    answers = list(Answer.objects.filter(response__participant__study=study)
                   .order_by("response_id", "pk").values_list(
                       "response__participant__external_id", "response__item__external_id",
                       "response__presentation", "question__key", "value", "missing", "comment"))
    return people, responses, answers


def load(make_study, alice, slug, data=LONG, *, as_file=False, **options):
    study = make_study(alice, slug=slug, preset="summeval-4x5", items=ITEMS)
    raw = data.encode()
    summary = responses_import(study=study, data=io.BytesIO(raw) if as_file else raw,
                               filename="long.csv", fmt="long", meta_columns=["group"], **options)
    return study, summary


@pytest.fixture
def postgres():
    require(connection.vendor == "postgresql", "the COPY path is PostgreSQL's (DATABASE_URL)")


def test_it_stores_the_same_rows_with_copy_as_in_memory(postgres, make_study, alice, monkeypatch):
    copied, copy_summary = load(make_study, alice, "copied")
    monkeypatch.setattr(responses_import_module, "_loads_with_copy", lambda fmt: False)
    memory, memory_summary = load(make_study, alice, "memory")
    assert stored(copied) == stored(memory)
    assert copy_summary == memory_summary
    people, responses, answers = stored(copied)
    assert [p[0] for p in people] == ["ann-b", "ann-a", "ann-c", "ann-d"]
    assert [p[4] for p in people] == [1, 2, 3, None]  # ann-d answered nothing: no pseudonym
    # ann-b's first presentation of d2 is position 1, whatever the order of the lines.
    assert ("ann-b", "d2", 1, 1, 700, 1, True, "import", [], None) in responses
    assert ("ann-b", "d2", 2, 9, 5000, 1, True, "import", [], None) in responses
    assert len(answers) == 4 * len(responses) == 4 * 8
    assert ("ann-a", "d1", 1, "fluency", None, "cant_judge", "") in answers
    assert ("ann-a", "d1", 1, "relevance", None, "skipped", "") in answers
    assert ("ann-a", "d2", 1, "coherence", 3.0, "", "Too short, really") in answers
    assert people[0][1] == {"group": "g2"}  # the last non-blank meta value wins


@pytest.mark.parametrize("copy", [True, False])
def test_a_file_read_a_chunk_at_a_time_stores_what_its_bytes_store(make_study, alice,
                                                                     monkeypatch, copy):
    """The command line hands the import its open file: on PostgreSQL the long format reads it
    a chunk at a time (here of 16 bytes), elsewhere whole; the rows are the bytes' rows."""
    from core.tabular import TextFile

    if copy:
        require(connection.vendor == "postgresql", "the COPY path is PostgreSQL's")
    else:
        monkeypatch.setattr(responses_import_module, "_loads_with_copy", lambda fmt: False)
    from_bytes, bytes_summary = load(make_study, alice, "bytes")
    monkeypatch.setattr(TextFile, "CHUNK", 16)
    from_file, file_summary = load(make_study, alice, "file", as_file=True)
    assert stored(from_file) == stored(from_bytes)
    assert file_summary == bytes_summary


def test_a_dry_run_with_copy_counts_and_writes_nothing(postgres, make_study, alice):
    study, summary = load(make_study, alice, "dry", dry_run=True)
    assert (summary.answers, summary.blanks, summary.duplicates, summary.imported) == (8, 2, 1, False)
    assert not Participant.objects.filter(study=study).exists()
    assert not Response.objects.filter(participant__study=study).exists()


BAD = """annotator,item,question,value,position
w,d1,coherence,5,1
w,d1,coherence,4,1
w,d9,coherence,4,2
v,d2,fluency,8,3
v,d2,fluency,3,4
v,d3,fluency,3,4
u,d4,coherence,2,
u,d4,coherence,2,5
u,d1,colour,2,6
"""


def problems(make_study, alice, slug, as_file=False):
    study = make_study(alice, slug=slug, preset="summeval-4x5", items=ITEMS)
    with pytest.raises(InputError) as caught:
        responses_import(study=study, data=io.BytesIO(BAD.encode()) if as_file else BAD.encode(),
                         filename="bad.csv", fmt="long")
    assert not Participant.objects.filter(study=study).exists()
    assert not Response.objects.filter(participant__study=study).exists()
    return [str(p) for p in caught.value.problems]


def test_it_reports_every_problem_at_once_and_writes_nothing(make_study, alice):
    found = problems(make_study, alice, "bad")
    assert found == [
        "bad.csv:3: duplicate row: annotator 'w' already has item 'd1' at position 1 "
        "(question 'coherence') on line 2",
        "bad.csv:4: column item: 'd9' is not an item id of this study",
        "bad.csv:5: column value: '8' is not a value of the scale (1, 2, 3, 4, 5)",
        "bad.csv:7: column position: position 4 of annotator 'v' is already used on line 6",
        "bad.csv:9: duplicate row: annotator 'u' already has a row for item 'd4' on line 8; "
        "a repeated presentation needs a different position",
        "bad.csv:10: column question: 'colour' is not a question of this study (its "
        "questions: coherence, consistency, fluency, relevance)",
    ]


def test_it_reports_the_same_problems_with_copy_as_in_memory(postgres, make_study, alice,
                                                               monkeypatch):
    copied = problems(make_study, alice, "bad-copy")
    assert problems(make_study, alice, "bad-copy-file", as_file=True) == copied
    monkeypatch.setattr(responses_import_module, "_loads_with_copy", lambda fmt: False)
    assert copied == problems(make_study, alice, "bad-memory")
    assert copied == problems(make_study, alice, "bad-memory-file", as_file=True)


def test_it_leaves_no_staging_table_behind_and_imports_twice_in_one_transaction(postgres,
                                                                                   make_study,
                                                                                   alice):
    load(make_study, alice, "first")
    load(make_study, alice, "second")
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_class WHERE relname LIKE 'concord_import_%%'")
        assert cursor.fetchone()[0] == 0


def test_the_command_line_limit_is_not_the_upload_limit(make_study, alice, settings, tmp_path):
    settings.CONCORD_MAX_UPLOAD_BYTES = 100
    study = make_study(alice, slug="cli", preset="summeval-4x5", items=ITEMS)
    data = tmp_path / "long.csv"
    data.write_text(LONG)
    assert data.stat().st_size > 100
    with pytest.raises(CommandError, match="the limit is 200 bytes"):
        call_command("import_responses", "cli", str(data), "--format", "long", "--max-bytes", "200",
                     "--meta-columns", "group")
    call_command("import_responses", "cli", str(data), "--format", "long", "--meta-columns", "group")
    assert Response.objects.filter(participant__study=study).count() == 8


PAIRS = ("id,text_a,text_b,control,metric:bleu,feature:len,meta:source,role,gold:rating\n"
         "q1,A cat sat.,The cat sat.,0,0.5,3,news,main,\n"
         "q2,\"Tab\tand \\\\ backslash\",Line,1,,,,main,\n"
         "q3,Check one,Check two,0,0.25,,wiki,check,4\n")


def items_stored(study):
    return list(study.items.order_by("position").values_list(
        "external_id", "position", "text", "text_a", "text_b", "is_control", "metrics",
        "features", "meta", "annotation", "role", "gold", "tolerance", "check_at"))


def test_it_stores_the_same_items_with_copy_as_with_bulk_create(postgres, make_study, alice,
                                                                 monkeypatch):
    from studies.services import items as study_services
    from studies.services import items_import

    copied = make_study(alice, slug="items-copy", preset="similarity-1-5", items=None, open=False)
    items_import(study=copied, data=PAIRS.encode(), filename="pairs.csv")
    monkeypatch.setattr(study_services, "_loads_with_copy", lambda: False)
    saved = make_study(alice, slug="items-orm", preset="similarity-1-5", items=None, open=False)
    items_import(study=saved, data=PAIRS.encode(), filename="pairs.csv")
    assert items_stored(copied) == items_stored(saved)
    text_a = items_stored(copied)[1][3]
    assert "\t" in text_a and "\\" in text_a  # COPY's own escapes are not the file's
    assert len(items_stored(copied)) == 3


BAD_ITEMS = ("id,text,control,metric:bleu\n"
             "a,First,0,0.5\n"
             "b,Second,2,x\n"       # two problems of its own row
             "a,Again,0,\n"         # a's second use names its first line
             "old,Exists,0,\n"      # already an item of the study
             ",No id,0,\n"
             "b,Third use,0,\n"
             "c\u2028d,Split id,0,\n"  # refused on its own row: not checked across rows
             "a,Third use,0,\n")


def test_it_reports_the_same_item_problems_with_copy_as_in_memory(postgres, make_study, alice,
                                                                  monkeypatch):
    from studies.services import items as study_services
    from studies.services import items_import

    def problems(slug):
        study = make_study(alice, slug=slug, items="id,text\nold,Before\n", open=False)
        with pytest.raises(InputError) as raised:
            items_import(study=study, data=BAD_ITEMS.encode(), filename="items.csv")
        assert list(study.items.values_list("external_id", flat=True)) == ["old"]
        return [(p.line, p.column, p.message) for p in raised.value.problems]

    copied = problems("copy-problems")
    monkeypatch.setattr(study_services, "_loads_with_copy", lambda: False)
    assert copied == problems("memory-problems")
    assert (4, "id", "id 'a' already used on line 2") in copied
    assert (7, "id", "id 'b' already used on line 3") in copied
    assert (9, "id", "id 'a' already used on line 2") in copied
    assert (8, "id", "the id contains the invisible character U+2028") in copied
    assert (5, "id", "id 'old' is already an item of this study") in copied
    assert [line for line, *_ in copied] == sorted(line for line, *_ in copied)
