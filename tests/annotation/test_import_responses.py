"""Responses collected elsewhere: Google Forms exports, long files, and every bad file rejected whole."""

import csv
import hashlib
import io
import json

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from annotation.models import Response
from annotation.services import responses_import
from core.problems import InputError
from core.responses import Upload
from core.stats._types import LongRatings
from core.stats.heuristics import slow_annotators
from studies.models import Assignment, Item, Participant
from studies.selectors import pseudonyms as stored_pseudonyms

pytestmark = pytest.mark.django_db

PASSAGES = "id,text\n" + "".join(f"p{n},Passage {n}: [Marie] met [her] brother.\n"
                                 for n in range(1, 9))
PROFILE = ["Are you a native speaker of French?", "Have you annotated coreference before?"]
COMMENT = "Any comments on the study?"
REPEATED = (2, 5, 7)


def question(n: int) -> str:
    return (f"Rate the annotation of passage {n} [0 = significant errors on key elements, "
            "1–2 = significant errors on peripheral elements, … 7 = no errors]")


HEADER = (["Timestamp", "Email address", *PROFILE]
          + [question(n) for n in range(1, 9)] + [question(n) for n in REPEATED] + [COMMENT])


def form_row(email, stamp, answers, *, repeats=None, profile=("", ""), comment=""):
    """One Google Forms submission; `answers` {passage: value}, missing = left blank."""
    cells = [f"2024/03/05 {stamp} AM GMT+1", email, *profile]
    cells += [str(answers.get(n, "")) for n in range(1, 9)]
    cells += [str((repeats or {}).get(n, "")) for n in REPEATED]
    return [*cells, comment]


def full(k):
    return {n: (k + n) % 8 for n in range(1, 9)}


def reps(k):
    return {n: (k + n + 1) % 8 for n in REPEATED}


# The first-appearance order is not the alphabetical order of the e-mails.
EMAILS = ["zoe@example.org", "adam@example.org", "mia@example.org", "bert@example.org",
          "yan@example.org", "carl@example.org", "lea@example.org", "dora@example.org",
          "xavier@example.org", "eve@example.org"]

ROWS = [
    form_row(EMAILS[0], "09:00:01", full(0), repeats=reps(0), profile=("Yes", "No")),
    # adam's first, partial submission: passages 1-4 only.
    form_row(EMAILS[1], "09:01:00", {1: 3, 2: 3, 3: 3, 4: 3}, profile=("No", "Yes")),
    form_row(EMAILS[2], "09:02:00", full(2), repeats=reps(2), profile=("Yes", "Yes")),
    form_row(EMAILS[3], "09:03:00", {n: v for n, v in full(3).items() if n != 6},
             repeats=reps(3), profile=("No", "No")),
    # adam again: passage 1 blank (keeps 3), passage 4 changed to 6, the rest answered.
    form_row(EMAILS[1], "09:04:00", {4: 6, 5: 1, 6: 1, 7: 1, 8: 1}, repeats={2: 4, 5: 1, 7: 2},
             comment="Sorry, I submitted twice"),
    form_row(EMAILS[4], "09:05:00", full(4), repeats=reps(4), profile=("Yes", "No")),
    form_row(EMAILS[5], "09:06:00", full(5), repeats=reps(5), profile=("Yes", "No")),
    form_row(EMAILS[6], "09:07:00", {1: 7, 2: 7, 3: 7}, profile=("No", "No")),
    form_row(EMAILS[7], "09:08:00", full(7), repeats=reps(7), profile=("Yes", "Yes")),
    form_row(EMAILS[8], "09:09:00", full(8), repeats=reps(8), profile=("No", "Yes")),
    form_row(EMAILS[6], "09:10:00", {3: 0, 4: 5, 5: 5, 6: 5, 7: 5, 8: 5},
             repeats={2: 7, 5: 4, 7: 5}),
    form_row(EMAILS[9], "09:11:00", full(9), profile=("Yes", "Yes"), comment="Long, but fine."),
    form_row(EMAILS[2], "09:12:00", {2: 0}),
]


def csv_bytes(rows, **kwargs) -> bytes:
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, **kwargs).writerows(rows)
    return out.getvalue().encode()


def google_forms() -> bytes:
    return csv_bytes([HEADER, *ROWS])


def item_map() -> bytes:
    return csv_bytes([["column", "item"], *[[question(n), f"p{n}"] for n in range(1, 9)]])


META = ["Timestamp", *PROFILE, COMMENT]


@pytest.fixture
def study(alice, make_study):
    return make_study(alice, slug="forms", items=PASSAGES)


def snapshot(study):
    """Row counts and a checksum of the study's tables."""
    tables = [
        list(Participant.objects.filter(study=study).order_by("id").values_list(
            "id", "external_id", "source", "meta", "n_assigned", "n_answered")),
        list(Response.objects.filter(participant__study=study).order_by("id").values_list(
            "id", "participant_id", "item_id", "presentation", "answers__value", "active_ms")),
        list(Assignment.objects.filter(participant__study=study).order_by("id").values_list(
            "id", "item_id", "position")),
        list(Item.objects.filter(study=study).order_by("id").values_list("id", "external_id")),
    ]
    digest = hashlib.sha256(json.dumps(tables, default=str).encode()).hexdigest()
    return [len(t) for t in tables], Response.objects.count(), digest


def rejected(study, data: bytes, filename="responses.csv", **options) -> InputError:
    before = snapshot(study)
    with pytest.raises(InputError) as caught:
        responses_import(study=study, data=data, filename=filename, **options)
    assert snapshot(study) == before
    return caught.value


def answers(study, email, presentation=1):
    return dict(Response.objects.filter(
        participant__study=study, participant__external_id=email, presentation=presentation,
    ).values_list("item__external_id", "answers__value"))


@pytest.fixture
def imported(study, tmp_path):
    export = tmp_path / "Coreference study (Responses) - Form responses 1.csv"
    export.write_bytes(google_forms())
    mapping = tmp_path / "items.csv"
    mapping.write_bytes(item_map())
    out = io.StringIO()
    call_command("import_responses", study.slug, str(export), "--format", "wide",
                 "--annotator-column", "Email address", "--item-map", str(mapping),
                 "--meta-columns", ",".join(META), stdout=out)
    return out.getvalue()


# --- Google Forms (wide) ----------------------------------------------------------------------


def test_it_imports_a_google_forms_export_with_the_command(study, imported):
    assert "Imported 106 answers of 10 annotators on 8 items" in imported
    assert "27 repeated presentations, 4 blanks, 3 rows merged" in imported
    people = Participant.objects.filter(study=study, source="import")
    assert sorted(people.values_list("external_id", flat=True)) == sorted(EMAILS)


def test_it_merges_rows_of_the_same_annotator_the_last_non_blank_answer_winning(study, imported):
    adam = answers(study, "adam@example.org")
    assert adam == {"p1": 3, "p2": 3, "p3": 3, "p4": 6, "p5": 1, "p6": 1, "p7": 1, "p8": 1}
    assert answers(study, "lea@example.org")["p3"] == 0  # changed in the second submission
    assert answers(study, "mia@example.org")["p2"] == 0  # a one-answer re-submission
    assert answers(study, "mia@example.org")["p1"] == full(2)[1]  # untouched by it


def test_it_stores_repeated_question_columns_as_the_duplicate_presentation(study, imported):
    assert answers(study, "adam@example.org", presentation=2) == {"p2": 4, "p5": 1, "p7": 2}
    assert answers(study, "zoe@example.org", presentation=2) == {f"p{n}": v for n, v in
                                                                  reps(0).items()}
    assert Response.objects.filter(participant__study=study, presentation=2).count() == 27
    assert not Response.objects.filter(participant__study=study, presentation__gt=2).exists()


def test_it_stores_no_row_for_a_blank_answer(study, imported):
    assert "p6" not in answers(study, "bert@example.org")
    assert answers(study, "eve@example.org", presentation=2) == {}
    assert not Response.objects.filter(participant__study=study,
                                       answers__value__isnull=True).exists()
    bert = Participant.objects.get(study=study, external_id="bert@example.org")
    assert (bert.n_assigned, bert.n_answered, bert.is_complete) == (11, 10, True)


def test_it_keeps_the_meta_columns_as_participant_metadata(study, imported):
    adam = Participant.objects.get(study=study, external_id="adam@example.org")
    assert adam.meta == {
        "Timestamp": "2024/03/05 09:04:00 AM GMT+1",  # the last submission's
        PROFILE[0]: "No", PROFILE[1]: "Yes",  # the first submission's, not blanked by the second
        COMMENT: "Sorry, I submitted twice",
    }
    assert Participant.objects.get(external_id="zoe@example.org").meta[PROFILE[0]] == "Yes"


def test_it_names_annotators_a1_a2_by_first_appearance_in_the_file(study, imported):
    names = stored_pseudonyms(study=study)
    by_email = dict(Participant.objects.filter(study=study).values_list("id", "external_id"))
    assert [by_email[pid] for pid in names] == EMAILS
    assert list(names.values()) == [f"A{n}" for n in range(1, 11)]


def test_it_imports_a_repeated_header_suffixed_by_the_export(study):
    header = ["Email address", question(1), question(2), question(2) + ".1"]
    data = csv_bytes([header, ["a@x.org", "1", "2", "3"]])
    mapping = {question(1): "p1", question(2): "p2", question(2) + ".1": "p2"}
    summary = responses_import(study=study, data=data, filename="f.csv", fmt="wide",
                               annotator_column="Email address", item_map=mapping)
    assert (summary.answers, summary.duplicates) == (3, 1)
    assert answers(study, "a@x.org", presentation=2) == {"p2": 3}


def test_it_turns_option_labels_into_scale_values_with_the_value_map(study):
    data = b"worker,p1,p2,p3\nw1,No errors,Significant errors on key elements,4.0\n"
    value_map = Upload("labels.csv", b"label,value\nNo errors,7\n"
                                     b"Significant errors on key elements,0\n")
    responses_import(study=study, data=data, filename="f.csv", fmt="wide",
                     annotator_column="worker", value_map=value_map)
    assert answers(study, "w1") == {"p1": 7, "p2": 0, "p3": 4}


def test_it_accepts_a_byte_order_mark_semicolons_and_numbers_written_4_0(study):
    data = "\ufeffannotator;item;value\nw1;p1;4.0\nw1;p2; 7 \n".encode()
    responses_import(study=study, data=data, filename="f.csv", fmt="long")
    assert answers(study, "w1") == {"p1": 4, "p2": 7}


def test_a_dry_run_counts_everything_and_writes_nothing(study):
    before = snapshot(study)
    summary = responses_import(study=study, data=google_forms(), filename="f.csv", fmt="wide",
                               annotator_column="Email address", meta_columns=META,
                               item_map=Upload("m.csv", item_map()), dry_run=True)
    assert snapshot(study) == before
    assert (summary.rows, len(summary.annotators), summary.items) == (13, 10, 8)
    assert (summary.answers, summary.blanks, summary.duplicates) == (106, 4, 27)
    assert not summary.imported


def test_it_imports_into_a_draft_or_closed_study(alice, make_study):
    draft = make_study(alice, slug="draft", items=PASSAGES, open=False)
    summary = responses_import(study=draft, data=b"annotator,item,value\nw,p1,1\n",
                               filename="f.csv", fmt="long")
    assert summary.imported and summary.answers == 1


def test_it_refuses_to_import_an_annotator_twice_and_names_them(study):
    responses_import(study=study, data=b"annotator,item,value\nw1,p1,1\nw2,p1,2\n",
                     filename="first.csv", fmt="long")
    error = rejected(study, b"annotator,item,value\nw3,p2,1\nw2,p2,1\n", filename="again.csv",
                     fmt="long")
    assert "again.csv:3: column annotator: annotator 'w2' was already imported" in str(error)
    assert len(error.problems) == 1


# --- long format and the heuristics -----------------------------------------------------------


def study_ratings(study):
    """First presentations as LongRatings, with their durations (one query)."""
    rows = list(Response.objects.filter(participant__study=study, presentation=1)
                .order_by("id").values_list("participant_id", "item_id", "answers__value",
                                            "active_ms"))
    people = list(stored_pseudonyms(study=study))
    items = sorted({r[1] for r in rows})
    ratings = LongRatings(
        item=np.array([items.index(r[1]) for r in rows]),
        annotator=np.array([people.index(r[0]) for r in rows]),
        value=np.array([r[2] for r in rows], dtype=float),
        n_items=len(items), n_annotators=len(people))
    durations = np.array([np.nan if r[3] is None else r[3] for r in rows], dtype=float)
    return people, ratings, durations


def test_it_feeds_imported_durations_to_the_slow_rule(study):
    lines = ["annotator,item,value,duration_ms,position"]
    for who, ms in (("fast", 8000), ("slowpoke", 420_000), ("steady", 30_000)):
        lines += [f"{who},p{n},{n % 8},{ms},{n}" for n in range(1, 6)]
    responses_import(study=study, data="\n".join(lines).encode(), filename="long.csv", fmt="long")
    people, ratings, durations = study_ratings(study)
    result = slow_annotators(ratings, durations)
    slowpoke = Participant.objects.get(study=study, external_id="slowpoke").pk
    assert result.flagged == (people.index(slowpoke),)
    assert result.records[people.index(slowpoke)].value == pytest.approx(420.0)


def test_it_stores_a_second_row_at_another_position_as_the_duplicate_presentation(study):
    data = b"annotator,item,value,position\nw,p1,5,9\nw,p2,3,1\nw,p1,2,4\n"
    responses_import(study=study, data=data, filename="long.csv", fmt="long")
    # The earlier position is the first presentation, whatever the order of the lines.
    assert answers(study, "w") == {"p1": 2, "p2": 3}
    assert answers(study, "w", presentation=2) == {"p1": 5}
    assert Response.objects.get(participant__external_id="w", item__external_id="p2",
                                presentation=1).position == 1


def test_a_long_file_merges_no_rows_and_the_command_does_not_say_it_did(study, tmp_path):
    """A long file's rows are one answer each: its summary has no merged rows (the wide
    format's "rows merged" once read "998 000 rows merged" for a million-answer file)."""
    data = b"annotator,item,value\nw,p1,1\nw,p2,3\nv,p1,2\n"
    assert responses_import(study=study, data=data, filename="long.csv", fmt="long",
                            dry_run=True).merged_rows == 0
    path = tmp_path / "long.csv"
    path.write_bytes(data)
    out = io.StringIO()
    call_command("import_responses", study.slug, str(path), "--format", "long", stdout=out)
    assert "Imported 3 answers of 2 annotators on 2 items" in out.getvalue()
    assert "merged" not in out.getvalue()


def test_it_counts_a_blank_long_value_as_presented_but_stores_nothing(study):
    summary = responses_import(study=study, data=b"annotator,item,value\nw,p1,\nw,p2,3\n",
                               filename="long.csv", fmt="long")
    assert (summary.answers, summary.blanks) == (1, 1)
    w = Participant.objects.get(study=study, external_id="w")
    assert (w.n_assigned, w.n_answered) == (2, 1)


# --- bad files: one message with every problem, database unchanged ----------------------------

BAD_FILES = {
    "encoding": (b"annotator,item,value\nren\xe9,p1,1\n", "long",
                 ["responses.csv:2: column 4: byte 0xE9 is not UTF-8 (the file looks "
                  "Windows-1252 or Latin-1)"]),
    "utf16": ("annotator,item,value\nw,p1,1\n".encode("utf-16"), "long", ["UTF-16"]),
    "delimiter": (b"annotator|item|value\nw|p1|1\n", "long",
                  ["responses.csv:1: the header has a single column ('annotator|item|value'); "
                   "separate columns with commas, semicolons or tabs"]),
    "unknown columns": (b"annotator,item,value,colour,mood\nw,p1,1,red,ok\n", "long",
                        ["responses.csv:1: column colour: unknown column 'colour'",
                         "responses.csv:1: column mood: unknown column 'mood'"]),
    "unknown items": (b"annotator,item,value\nw,p1,1\nw,p99,1\nv,nope,2\n", "long",
                      ["responses.csv:3: column item: 'p99' is not an item id of this study",
                       "responses.csv:4: column item: 'nope' is not an item id of this study"]),
    "values outside the scale": (b"annotator,item,value\nw,p1,8\nw,p2,maybe\nw,p3,-1\n", "long",
                                 ["responses.csv:2: column value: '8' is not a value of the "
                                  "scale (0, 1, 2, 3, 4, 5, 6, 7)",
                                  "responses.csv:3: column value: 'maybe' is not a value",
                                  "responses.csv:4: column value: '-1' is not a value"]),
    "duplicate rows": (b"annotator,item,value,position\nw,p1,1,0\nw,p1,1,0\nv,p2,1,\nv,p2,3,\n",
                       "long",
                       ["responses.csv:3: duplicate row: annotator 'w' already has item 'p1' at "
                        "position 0 on line 2",
                        "responses.csv:5: duplicate row: annotator 'v' already has a row for "
                        "item 'p2' on line 4"]),
    "malformed lines": (b"annotator,item,value\nw,p1,1,extra\nw,p2\nw,p3,\"2\n", "long",
                        ["responses.csv:2: 4 fields where the header has 3",
                         "responses.csv:3: 2 fields where the header has 3",
                         "malformed line"]),
    "wide unknown columns": (b"worker,p1,Favourite colour,p2\nw,1,red,2\n", "wide",
                             ["responses.csv:1: column 3: unknown column 'Favourite colour'"]),
}


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_it_rejects_a_bad_file_with_one_message_listing_every_problem(study, case):
    data, fmt, expected = BAD_FILES[case]
    error = rejected(study, data, fmt=fmt, annotator_column="worker" if fmt == "wide" else None)
    message = error.render()
    assert message.startswith(f"{len(error.problems)} problem(s); nothing was imported:")
    for fragment in expected:
        assert fragment in message, message
    assert len(error.problems) == len(expected)


def test_it_lists_every_problem_of_a_wide_file_at_once_with_lines_and_columns(study):
    header = ["Email address", "Timestamp", question(1), question(2), "p3", "Notes"]
    data = csv_bytes([header, ["a@x.org", "t", "1", "9", "2", "n"],
                      ["", "t", "1", "1", "1", "n"], ["b@x.org", "t", "one", "1", "1", "n"]])
    error = rejected(study, data, fmt="wide", annotator_column="Email address",
                     meta_columns=["Timestamp", "Age"],
                     item_map=Upload("map.csv", csv_bytes([[question(1), "p1"],
                                                           [question(2), "p2"],
                                                           ["Notes", "p404"]])))
    text = str(error)
    assert "map.csv:3: column item: 'p404' is not an item id of this study" in text
    assert "responses.csv:1: column 6: unknown column 'Notes'" in text
    assert "responses.csv:1: the meta column 'Age' is not in the file" in text
    assert "responses.csv:2: column 4: '9' is not a value of the scale" in text
    assert "responses.csv:3: column 1: empty annotator id" in text
    assert "responses.csv:4: column 3: 'one' is not a value of the scale" in text
    assert len(error.problems) == 6


def test_it_rejects_a_file_over_the_size_limit_with_a_clear_message(study, settings):
    settings.CONCORD_MAX_UPLOAD_BYTES = 1_000_000
    error = rejected(study, b"annotator,item,value\n" + b"w,p1,1\n" * 250_000, fmt="long")
    assert ("the file is 1\u202f750\u202f021 bytes; the limit is 1\u202f000\u202f000 bytes (976.6 KiB)"
            in str(error))
    assert len(error.problems) == 1


def test_it_requires_the_annotator_column_in_wide_format(study):
    error = rejected(study, b"Email,p1\na,1\n", fmt="wide", annotator_column="Email address")
    assert "the annotator column 'Email address' is not in the file" in str(error)


def test_the_command_exits_non_zero_with_every_problem_and_changes_nothing(study, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"annotator,item,value\nw,p1,9\nw,p404,1\n")
    before = snapshot(study)
    with pytest.raises(CommandError) as caught:
        call_command("import_responses", study.slug, str(bad), "--format", "long")
    message = str(caught.value)
    assert "2 problem(s); nothing was imported" in message
    assert f"{bad}:2: column value: '9'" in message and f"{bad}:3: column item: 'p404'" in message
    assert snapshot(study) == before


# --- the upload page and the pseudonym mapping ------------------------------------------------


@pytest.fixture
def uploads(settings, tmp_path):
    """Where the page keeps an upload between its preview and its confirmation."""
    settings.IMPORTS_DIR = tmp_path / "imports"
    return settings.IMPORTS_DIR


def upload(client, study, data=b"annotator,item,value,duration_ms\nw1,p1,3,1200\nw1,p2,,\n"
           b"w2,p1,5,900\n", **fields):
    from django.core.files.uploadedfile import SimpleUploadedFile

    form = {"file": SimpleUploadedFile("long.csv", data), "format": "long", **fields}
    return client.post(f"/studies/{study.slug}/responses/import/", form)


def test_the_page_previews_then_imports_on_confirm(study, alice_client, uploads):
    response = upload(alice_client, study)
    assert response.status_code == 302 and not Response.objects.exists()
    preview = alice_client.get(response["Location"])
    assert preview.status_code == 200
    assert b'data-summary="answers">2<' in preview.content
    assert b'data-summary="blanks">1<' in preview.content
    assert len(list(uploads.iterdir())) == 1
    confirm = response["Location"] + "confirm/"
    done = alice_client.post(confirm)
    assert done.status_code == 302 and done["Location"] == f"/studies/{study.slug}/"
    assert Response.objects.filter(participant__study=study).count() == 2
    assert list(uploads.iterdir()) == []  # the stored upload is gone
    assert alice_client.post(confirm).status_code == 404  # confirmed once only


def test_the_page_validates_again_on_confirm(study, alice_client, uploads):
    preview_url = upload(alice_client, study)["Location"]
    responses_import(study=study, data=b"annotator,item,value\nw2,p3,1\n", filename="other.csv",
                     fmt="long")
    page = alice_client.post(preview_url + "confirm/")
    assert page.status_code == 400
    assert b"annotator &#x27;w2&#x27; was already imported" in page.content
    assert Response.objects.filter(participant__study=study).count() == 1


def test_the_page_lists_every_problem_and_stores_nothing(study, alice_client, uploads):
    page = upload(alice_client, study, data=b"annotator,item,value\nw,p1,9\nw,p9,1\n")
    assert page.status_code == 400
    assert b"nothing was imported" in page.content and page.content.count(b"<tr><td>") == 2
    assert not uploads.exists() or list(uploads.iterdir()) == []


def test_the_page_lists_the_first_200_problems_and_counts_the_rest(study, alice_client, uploads):
    page = upload(alice_client, study, data=b"annotator,item,value\n" + b"w,p1,9\n" * 500)
    assert page.status_code == 400
    assert b"500 problems; nothing was imported" in page.content
    assert page.content.count(b"<tr><td>") == 200
    assert "… and 300 more".encode() in page.content


def test_it_refuses_a_nul_character_naming_its_line_and_column(study):
    error = rejected(study, b"annotator,item,value\nw,p1,1\nv\x00,p2,1\n", fmt="long")
    assert "responses.csv:3: column 1: a NUL character (0x00) in the cell" in str(error)


def test_another_researcher_cannot_see_or_confirm_an_upload(study, alice_client, bob, uploads,
                                                           make_study):
    preview_url = upload(alice_client, study)["Location"]
    other = Client()
    other.force_login(bob)
    make_study(bob, slug="bobs", items=PASSAGES)
    job = preview_url.rstrip("/").rsplit("/", 1)[1]
    assert other.get(preview_url).status_code == 404
    assert other.post(preview_url + "confirm/").status_code == 404
    assert other.get(f"/studies/bobs/imports/{job}/").status_code == 404
    assert other.post(f"/studies/bobs/imports/{job}/confirm/").status_code == 404
    assert not Response.objects.exists()


def test_the_confirm_form_needs_a_csrf_token(study, alice, uploads):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    assert upload(client, study).status_code == 403


def test_the_pure_parser_knows_the_length_of_a_participant_id():
    from core import responses

    assert responses.MAX_ID_LENGTH == Participant._meta.get_field("external_id").max_length


def test_the_page_never_reports_an_oversized_file_as_the_size_of_the_limit(
        study, alice_client, uploads, settings):
    settings.CONCORD_MAX_UPLOAD_BYTES = 1000
    page = upload(alice_client, study, data=b"annotator,item,value\n" + b"w,p1,1\n" * 140)
    assert page.status_code == 400
    assert ("the file is 1\u202f001 bytes; the limit is 1\u202f000 bytes" in page.content.decode())


def test_the_command_ignores_the_columns_it_is_told_to(study, tmp_path):
    """--ignore-columns: a column read by nothing, neither an error nor metadata."""
    path = tmp_path / "form.csv"
    path.write_bytes(b"Email address,Your name,p1\nzoe@example.org,Zoe,3\n")
    out = io.StringIO()
    call_command("import_responses", study.slug, str(path), "--format", "wide",
                 "--annotator-column", "Email address", "--ignore-columns", "Your name",
                 stdout=out)
    assert "Imported 1 answers of 1 annotators" in out.getvalue()
    assert Participant.objects.get(study=study, external_id="zoe@example.org").meta == {}
    error = rejected(study, path.read_bytes(), fmt="wide", annotator_column="Email address")
    assert "unknown column 'Your name'" in str(error)
