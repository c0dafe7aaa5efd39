"""A methods bundle replays: `import_bundle` makes a study whose analysis gives the bundle's
results.json again, value for value, for both demo studies; the bundle's responses.csv reads
back with `import_responses --format long`; a hostile or broken archive is refused with a clear
message and leaves nothing behind."""

from __future__ import annotations

import io
import json
import random
import re
import zipfile

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from analysis.models import AnalysisRun
from annotation.models import Answer, Response
from annotation.services import AnswerRejected
from exports.services import export_open
from imports.bundles import REPLAY_DIFFERS
from studies.definitions import load_definition
from studies.models import Item, Participant, Study
from studies.selectors import study_definition
from studies.services import items_import, participants_invite, study_create_from_definition
from tests.analysis.test_questions import ITEMS, Summeval
from tests.annotation.test_checks import CHECKED_CSV
from tests.answers import submit

pytestmark = pytest.mark.django_db


def bundle_of(slug: str) -> bytes:
    call_command("analyze", slug, "--output", "/dev/null", stdout=io.StringIO())
    study = Study.objects.get(slug=slug)
    return b"".join(export_open(study=study, what="bundle").chunks)


def item_files(data: bytes) -> dict[str, bytes]:
    """The bundle's files of per-item records, which results.json keeps apart."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name) for name in ("labels.csv", "item_gaps.csv")}


def replayed_item_files() -> dict[str, bytes]:
    """The same files, exported from the replayed study's newest run."""
    study = Study.objects.get(slug="replayed")
    return {f"{name}.csv": b"".join(export_open(study=study, what=what).chunks)
            for name, what in (("labels", "labels"), ("item_gaps", "gaps"))}


def without_replay_fields(document: dict) -> dict:
    """The document without the fields a replay legitimately changes (REPLAY_DIFFERS)."""
    document = json.loads(json.dumps(document))
    for path in REPLAY_DIFFERS:
        node = document
        for key in path[:-1]:
            node = node[key]
        node.pop(path[-1])
    return document


def differences(old, new, path: str = "") -> list[str]:
    """Every place where `new` is not exactly `old` (values compared with ==, no rounding)."""
    if isinstance(old, dict) and isinstance(new, dict):
        return [d for key in sorted(set(old) | set(new), key=str)
                for d in (differences(old[key], new[key], f"{path}.{key}")
                          if key in old and key in new else [f"{path}.{key}: only in one"])]
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [d for n, (a, b) in enumerate(zip(old, new, strict=True))
                for d in differences(a, b, f"{path}[{n}]")]
    return [] if old == new else [f"{path}: {old!r} became {new!r}"]


def counts() -> tuple[int, ...]:
    return (Study.objects.count(), Item.objects.count(), Participant.objects.count(),
            Response.objects.count(), Answer.objects.count())


@pytest.fixture
def demos(demo_studies):
    user, _ = demo_studies
    return user


@pytest.mark.parametrize("slug", ["demo-coref", "demo-similarity"])
def test_it_replays_a_demo_bundle_to_the_same_results(demos, tmp_path, slug):
    data = bundle_of(slug)
    path = tmp_path / f"{slug}-bundle.zip"
    path.write_bytes(data)
    out = io.StringIO()
    call_command("import_bundle", str(path), "--slug", "replayed", "--owner", "researcher",
                 stdout=out)
    assert "Created study 'replayed' (closed)" in out.getvalue()
    call_command("analyze", "replayed", "--output", str(tmp_path / "again.json"),
                 stdout=io.StringIO())
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        recorded = json.loads(archive.read("results.json"))
    again = json.loads((tmp_path / "again.json").read_text())
    assert again["study"]["slug"] == "replayed"
    found = differences(without_replay_fields(recorded), without_replay_fields(again))
    assert found[:20] == []
    # and every item's label and gap, which the run stores beside its document
    files = item_files(data)
    assert files == replayed_item_files()
    assert files["labels.csv"].count(b"\n") > 10 and files["item_gaps.csv"].count(b"\n") > 10
    # the durations came back, so the "slow" and "too fast" rules flag the same annotators
    assert again["heuristics"] == recorded["heuristics"]


def replayed_results(study: Study, tmp_path) -> tuple[dict, dict]:
    """Analyse `study`, export its bundle, replay it as 'replayed', analyse that: both documents."""
    data = bundle_of(study.slug)
    path = tmp_path / "bundle.zip"
    path.write_bytes(data)
    call_command("import_bundle", str(path), "--slug", "replayed", "--owner",
                 study.owner.username, stdout=io.StringIO())
    call_command("analyze", "replayed", "--output", str(tmp_path / "again.json"),
                 stdout=io.StringIO())
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        recorded = json.loads(archive.read("results.json"))
    return recorded, json.loads((tmp_path / "again.json").read_text())


def test_it_replays_several_questions_revisions_and_cant_judge(make_study, alice, tmp_path):
    study = make_study(alice, slug="summeval", preset="summeval-4x5", items=ITEMS)
    Summeval(study)
    recorded, again = replayed_results(study, tmp_path)
    assert differences(without_replay_fields(recorded), without_replay_fields(again)) == []
    assert sum(q["counts"]["cant_judge"] for q in again["questions"]) > 0
    revised = Response.objects.filter(participant__study__slug="replayed", revision=2)
    assert revised.count() == 2 and not revised.filter(is_current=False).exists()


def test_it_replays_attention_checks_and_their_failures(make_study, alice, tmp_path):
    probe = make_study(alice, slug="probe", items="", open=False)
    study = make_study(alice, slug="checked", items=CHECKED_CSV.format(
        q=probe.primary_question.key))
    for n, participant in enumerate(participants_invite(study=study, count=3)):
        order = list(participant.assignments.order_by("position")
                     .values_list("position", "item__external_id"))
        for position, item in order:
            # the first participant fails every check, the others answer the checks right
            value = {"c1": 2, "c2": 6, "c3": 5}.get(item, 3) if n else 0
            try:
                submit(participant, position, value, active_ms=1000 + 10 * position)
            except AnswerRejected:  # stopped: the study has ended for this link
                break
    recorded, again = replayed_results(study, tmp_path)
    assert differences(without_replay_fields(recorded), without_replay_fields(again)) == []
    failed = {row["annotator"]: row["failed"] for row in again["attention_checks"]}
    assert sorted(failed.values()) == [0, 0, 2]  # stopped after two failures (check_stop_after)
    assert [row["stopped"] for row in again["attention_checks"]].count(True) == 1
    stopped = Participant.objects.get(study__slug="replayed", stopped_at__isnull=False)
    assert stopped.completed_at is None


def test_a_replayed_study_counts_the_same_participants_complete(make_study, alice, tmp_path):
    """Issue 23, point 3: 3 of 6 complete in the original (one in progress, one screened out,
    one stopped by the attention checks) is 3 of 6 in the replay, not "6 complete"."""
    study = make_study(alice, slug="half")
    people = participants_invite(study=study, count=6)
    for n, participant in enumerate(people):
        for position in range(participant.n_assigned if n < 3 else 1):
            submit(participant, position, 3, active_ms=1000 + position)
    Participant.objects.filter(pk=people[4].pk).update(screening=Participant.Screening.FAILED)
    stopped_at = timezone.now()
    Participant.objects.filter(pk=people[5].pk).update(stopped_at=stopped_at)
    client = Client()
    client.force_login(alice)

    def overview(slug: str) -> str:
        html = client.get(reverse("studies:detail", args=[slug])).content.decode()
        return re.search(r"<dt>Participants</dt><dd>([^<]*)</dd>", html)[1]

    def states(slug: str) -> dict[str, tuple]:
        return {p.pseudonym: (p.status, p.n_assigned, p.completed_at, p.stopped_at)
                for p in Participant.objects.filter(study__slug=slug).select_related("study")}

    assert overview("half") == "6 (3 complete)"
    before = states("half")
    assert sum(s[0] == "complete" for s in before.values()) == 3
    recorded, again = replayed_results(Study.objects.get(slug="half"), tmp_path)
    assert differences(without_replay_fields(recorded), without_replay_fields(again)) == []
    assert overview("replayed") == "6 (3 complete)"
    after = states("replayed")
    # the same state, items assigned and times, annotator by annotator; the one in progress is
    # "unfinished" now that the replayed study is closed
    assert {a: s[1:] for a, s in after.items()} == {a: s[1:] for a, s in before.items()}
    assert {a: s[0] for a, s in after.items()} == {
        a: "unfinished when the study closed" if s[0] == "in progress" else s[0]
        for a, s in before.items()}
    assert sorted(s[0] for s in after.values()).count("screened out") == 1
    assert sorted(s[0] for s in after.values()).count("stopped by the attention checks") == 1


def test_a_bundle_without_a_participants_file_replays_everyone_complete(demos, tmp_path):
    """Bundles written before the participants file still replay (every annotator complete)."""
    data = bundle_of("demo-coref")
    buffer = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as old, zipfile.ZipFile(buffer, "w") as new:
        for info in old.infolist():
            if info.filename != "participants.csv":
                new.writestr(info, old.read(info))
    path = tmp_path / "old.zip"
    path.write_bytes(buffer.getvalue())
    call_command("import_bundle", str(path), "--slug", "replayed", "--owner", "researcher",
                 stdout=io.StringIO())
    replayed = Participant.objects.filter(study__slug="replayed")
    assert replayed.exists() and not replayed.filter(completed_at__isnull=True).exists()


def test_a_broken_participants_file_is_named_and_nothing_is_kept(demos, tmp_path):
    data = bundle_of("demo-coref")
    buffer = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as old, zipfile.ZipFile(buffer, "w") as new:
        for info in old.infolist():
            body = old.read(info)
            if info.filename == "participants.csv":
                lines = body.decode().splitlines()
                cells = lines[1].split(",")
                cells[1], cells[4] = "-3", "maybe"
                body = "\n".join([lines[0], ",".join(cells), *lines[2:]]).encode()
            new.writestr(info, body)
    path = tmp_path / "broken.zip"
    path.write_bytes(buffer.getvalue())
    before = counts()
    with pytest.raises(CommandError) as caught:
        call_command("import_bundle", str(path), "--slug", "replayed", "--owner", "researcher",
                     stdout=io.StringIO())
    message = str(caught.value)
    assert "participants.csv" in message and "'-3' is not a whole number" in message
    assert "screening must be empty or one of pending, passed, failed" in message
    assert counts() == before


def test_the_replayed_study_keeps_revisions_durations_and_pseudonyms(demos, tmp_path):
    original = Study.objects.get(slug="demo-similarity")
    first = Response.objects.filter(participant__study=original).order_by("pk").first()
    # one changed answer: a second revision with its own time
    Response.objects.filter(pk=first.pk).update(is_current=False)
    revised = Response.objects.create(participant=first.participant, item=first.item,
                                      presentation=first.presentation, position=first.position,
                                      revision=2, is_current=True, active_ms=1234)
    Answer.objects.create(response=revised, question=original.primary_question, value=1)
    path = tmp_path / "b.zip"
    path.write_bytes(bundle_of("demo-similarity"))
    call_command("import_bundle", str(path), "--slug", "copy", "--owner", "researcher",
                 stdout=io.StringIO())
    copy = Study.objects.get(slug="copy")
    assert copy.status == Study.Status.CLOSED
    event = copy.events.get(action="close")
    assert event.detail["replayed_from"] == "b.zip"
    # its items came in as an upload, recorded too (issue 23, point 6)
    assert copy.events.get(action="items").detail["files"] == ["items.csv"]
    assert copy.analysis_settings == AnalysisRun.objects.filter(
        study=original).latest("pk").settings

    def stored(study):
        return sorted(Response.objects.filter(participant__study=study).values_list(
            "participant__pseudonym_number", "item__external_id", "presentation", "position",
            "revision", "is_current", "active_ms", "answers__value"))

    assert stored(copy) == stored(original)
    definition, again = study_definition(study=original), study_definition(study=copy)
    for key in ("slug", "analysis"):
        definition.pop(key), again.pop(key)
    assert again == definition


def test_the_bundle_carries_a_definition_create_study_reads(demos, tmp_path):
    data = bundle_of("demo-coref")
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        definition = json.loads(archive.read("definition.json"))
        readme = archive.read("README.md").decode()
    assert definition == study_definition(study=Study.objects.get(slug="demo-coref"))
    definition["slug"] = "from-definition"
    path = tmp_path / "definition.json"
    path.write_text(json.dumps(definition))
    call_command("create_study", "--definition", str(path), "--owner", "researcher",
                 stdout=io.StringIO())
    assert Study.objects.filter(slug="from-definition").exists()
    assert "import_bundle" in readme


def test_the_bundles_responses_read_back_with_the_long_import(demos, tmp_path):
    data = bundle_of("demo-similarity")
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        (tmp_path / "definition.json").write_bytes(archive.read("definition.json"))
        (tmp_path / "items.csv").write_bytes(archive.read("items.csv"))
        (tmp_path / "responses.csv").write_bytes(archive.read("responses.csv"))
    definition = json.loads((tmp_path / "definition.json").read_text())
    definition["slug"] = "long"
    (tmp_path / "definition.json").write_text(json.dumps(definition))
    call_command("create_study", "--definition", str(tmp_path / "definition.json"),
                 "--owner", "researcher", stdout=io.StringIO())
    call_command("import_items", "long", str(tmp_path / "items.csv"), stdout=io.StringIO())
    out, err = io.StringIO(), io.StringIO()
    call_command("import_responses", "long", str(tmp_path / "responses.csv"), "--format", "long",
                 stdout=out, stderr=err)
    assert "Imported 588 answers of 12 annotators" in out.getvalue()
    assert ("responses.csv: columns not read: presentation, duplicate, submitted_at, source, "
            "control, revision, role") in err.getvalue()
    durations = set(Response.objects.filter(participant__study__slug="long")
                    .values_list("active_ms", flat=True))
    assert None not in durations and max(durations) > 380_000  # the slow annotator's minutes


def test_an_unknown_long_column_is_still_an_error(demos, tmp_path):
    path = tmp_path / "answers.csv"
    path.write_text("annotator,item,value,vlaue\nx,pair001,3,3\n")
    with pytest.raises(CommandError, match="unknown column 'vlaue'"):
        call_command("import_responses", "demo-similarity", str(path), "--format", "long")


# --- refused archives ---------------------------------------------------------------------------


def refused(tmp_path, data: bytes, *options: str) -> str:
    path = tmp_path / "upload.zip"
    path.write_bytes(data)
    before = counts()
    with pytest.raises(CommandError) as caught:
        call_command("import_bundle", str(path), "--owner", "researcher", *options)
    assert counts() == before
    return str(caught.value)


def zipped(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, body in members.items():
            archive.writestr(name, body)
    return out.getvalue()


def test_it_refuses_a_file_that_is_not_a_zip(demos, tmp_path):
    message = refused(tmp_path, b"annotator,item,value\n")
    assert "upload.zip: not a zip file" in message
    assert "nothing was created" in message


def test_it_refuses_a_path_out_of_the_archive(demos, tmp_path):
    message = refused(tmp_path, zipped({"../../etc/cron.d/x": b"boom", "definition.json": b"{}"}))
    assert "member '../../etc/cron.d/x' has '..' (a path out of the archive)" in message
    message = refused(tmp_path, zipped({"/etc/passwd": b"x"}))
    assert "member '/etc/passwd' has an absolute path" in message


def test_it_refuses_a_zip_bomb_from_its_declared_size(demos, tmp_path, settings):
    settings.CONCORD_BUNDLE_MAX_UNPACKED_BYTES = 1_000_000
    bomb = zipped({"revisions.csv": b"0" * 5_000_000})
    assert len(bomb) < 10_000
    message = refused(tmp_path, bomb)
    assert "upload.zip/revisions.csv: the member unpacks to 5000000 bytes" in message


def test_it_refuses_an_archive_too_large_or_with_too_many_members(demos, tmp_path, settings):
    settings.CONCORD_BUNDLE_MAX_BYTES = 1000
    incompressible = random.Random(0).randbytes(5000)
    message = refused(tmp_path, zipped({"a.bin": incompressible}))
    assert "upload.zip: " in message and "limit" in message
    settings.CONCORD_BUNDLE_MAX_BYTES = 10_000_000
    settings.CONCORD_BUNDLE_MAX_MEMBERS = 3
    message = refused(tmp_path, zipped({f"f{n}": b"" for n in range(4)}))
    assert "4 members; a bundle has at most 3" in message


def test_it_refuses_a_taken_slug_and_a_missing_member(demos, tmp_path):
    data = bundle_of("demo-coref")
    message = refused(tmp_path, data)
    assert "a study 'demo-coref' already exists; give the new study another one with --slug" \
        in message
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        members = {n: archive.read(n) for n in archive.namelist() if n != "definition.json"}
    message = refused(tmp_path, zipped(members), "--slug", "other")
    assert ("upload.zip: definition.json is missing: this bundle was written before bundles "
            "carried their study's definition; export the study's bundle again") in message
    del members["settings.json"]
    message = refused(tmp_path, zipped(members), "--slug", "other")
    assert "definition.json is missing: is this a bundle export of Concord?" in message


def test_a_bad_revision_is_named_by_file_line_and_column_and_nothing_is_kept(demos, tmp_path):
    data = bundle_of("demo-similarity")
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        members = {n: archive.read(n) for n in archive.namelist()}
    lines = members["revisions.csv"].decode().split("\r\n")
    header = lines[0].split(",")
    cells = lines[3].split(",")
    cells[header.index("value")] = "9"
    lines[3] = ",".join(cells)
    members["revisions.csv"] = "\r\n".join(lines).encode()
    message = refused(tmp_path, zipped(members), "--slug", "broken")
    assert "upload.zip/revisions.csv:4: column value: '9' is not a value of the question's " \
           "scale (1, 2, 3, 4, 5)" in message
    assert not Study.objects.filter(slug="broken").exists()


# --- the page -----------------------------------------------------------------------------------


def test_the_page_imports_a_bundle_for_a_signed_in_researcher(demos, client, tmp_path):
    data = bundle_of("demo-similarity")
    client.force_login(demos)
    page = client.get(reverse("imports:bundle_import"))
    assert page.status_code == 200
    assert b'enctype="multipart/form-data"' in page.content
    upload = io.BytesIO(data)
    upload.name = "demo-similarity-bundle.zip"
    response = client.post(reverse("imports:bundle_import"), {"file": upload, "slug": "web"})
    assert response.status_code == 302
    assert response["Location"] == reverse("studies:detail", args=["web"])
    study = Study.objects.get(slug="web")
    assert study.owner == demos
    assert Response.objects.filter(participant__study=study).count() == 588


def test_the_page_leaves_a_large_bundle_to_the_command(demos, client, settings):
    settings.CONCORD_BUNDLE_SYNC_MAX_ROWS = 100
    upload = io.BytesIO(bundle_of("demo-similarity"))
    upload.name = "big.zip"
    client.force_login(demos)
    before = counts()
    response = client.post(reverse("imports:bundle_import"), {"file": upload, "slug": "web"})
    assert response.status_code == 400
    assert ("big.zip/revisions.csv: about 588 answer rows, more than the 100 this page imports "
            "while you wait; import it on the server with `python manage.py import_bundle "
            "big.zip`") in response.content.decode().replace("&#x27;", "'").replace("&quot;", '"')
    assert counts() == before


def test_the_page_shows_every_problem_and_creates_nothing(demos, client):
    client.force_login(demos)
    upload = io.BytesIO(b"not a zip")
    upload.name = "x.zip"
    before = counts()
    response = client.post(reverse("imports:bundle_import"), {"file": upload, "slug": "web"})
    assert response.status_code == 400
    assert b"x.zip: not a zip file" in response.content
    assert counts() == before


def test_the_page_needs_a_signed_in_user_and_a_csrf_token(demos, client, tmp_path):
    response = client.get(reverse("imports:bundle_import"))
    assert response.status_code == 302 and "/login/" in response["Location"]
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    strict.force_login(demos)
    upload = io.BytesIO(b"x")
    upload.name = "x.zip"
    assert strict.post(reverse("imports:bundle_import"), {"file": upload}).status_code == 403


def test_the_new_study_page_links_to_the_bundle_import(demos, client):
    client.force_login(demos)
    page = client.get(reverse("studies:new")).content.decode()
    assert reverse("imports:bundle_import") in page


def test_the_response_upload_preview_shows_the_columns_it_does_not_read(demos, client):
    with zipfile.ZipFile(io.BytesIO(bundle_of("demo-similarity"))) as archive:
        responses, items = archive.read("responses.csv"), archive.read("items.csv")
        definition = json.loads(archive.read("definition.json"))
    definition["slug"] = "preview"  # a study of the same items, without answers yet
    study = study_create_from_definition(
        owner=demos, definition=load_definition(json.dumps(definition).encode(), "d.json"))
    items_import(study=study, data=items, filename="items.csv")
    client.force_login(demos)
    upload = io.BytesIO(responses)
    upload.name = "responses.csv"
    response = client.post(reverse("imports:responses_import", args=["preview"]),
                           {"file": upload, "format": "long"}, follow=True)
    page = response.content.decode()
    assert "Nothing is stored yet" in page
    assert "Warning: columns not read: presentation, duplicate, submitted_at" in page
