"""Coreference items: a gold and a system file, one document per item, metrics on import."""

import json

import pytest
from django.core.management import CommandError, call_command

from core.metrics.coref import COREF_METRICS, SPLIT_LEA_METRICS, coref_metrics
from core.metrics.features import error_features
from core.metrics.formats import read_gold_and_system
from core.problems import InputError
from studies.models import Item
from studies.services import coref_items_import

pytestmark = pytest.mark.django_db

GOLD_CONLL = """#begin document (news); part 000
news 0 0 Marie (0)
news 0 1 met -
news 0 2 her (0)|(1
news 0 3 brother 1)
news 0 4 . -

news 0 0 He (1)
news 0 1 smiled -
news 0 2 . -
#end document
#begin document (wiki); part 001
wiki 0 0 The (2
wiki 0 1 phone 2)
wiki 0 2 broke -
wiki 0 3 ; -
wiki 0 4 it (2)
wiki 0 5 was -
wiki 0 6 old -
#end document
"""

SYSTEM_CONLL = """#begin document (news); part 000
news 0 0 Marie (5)
news 0 1 met -
news 0 2 her (5)|(6
news 0 3 brother 6)
news 0 4 . -

news 0 0 He (5)
news 0 1 smiled -
news 0 2 . -
#end document
#begin document (wiki); part 001
wiki 0 0 The -
wiki 0 1 phone (3)
wiki 0 2 broke -
wiki 0 3 ; -
wiki 0 4 it (3)
wiki 0 5 was -
wiki 0 6 old -
#end document
"""

TEXT = "Marie and Paul met. They smiled at her."
#       0    5   9    14   19   24     31 34
GOLD_RUCOCO = [
    {"name": "r1", "text": TEXT,
     "entities": [[[0, 5], [34, 37]], [[10, 14]], [[20, 24]]], "includes": [[], [], [0, 1]]},
    {"name": "r2", "text": "Bob slept. He snored.",
     "entities": [[[0, 3], [11, 13]]]},
]
SYSTEM_RUCOCO = [
    {"name": "r1", "text": TEXT,
     "entities": [[[0, 5]], [[10, 14], [34, 37]], [[20, 24]]], "includes": [[], [], [0, 1]]},
    {"name": "r2", "text": "Bob slept. He snored.",
     "entities": [[[0, 3], [11, 13]]]},
]


@pytest.fixture
def coref_study(make_study, alice):
    return make_study(alice, slug="coref", items=None, open=False)


def conll_import(study, gold=GOLD_CONLL, system=SYSTEM_CONLL):
    return coref_items_import(study=study, gold=gold.encode(), system=system.encode(),
                              gold_name="gold.conll", system_name="sys.conll", fmt="conll2012")


def rucoco_import(study, gold=GOLD_RUCOCO, system=SYSTEM_RUCOCO):
    return coref_items_import(study=study, gold=json.dumps(gold).encode(),
                              system=json.dumps(system).encode(), gold_name="gold.json",
                              system_name="sys.json", fmt="rucoco-json")


def problems_of(call, *args):
    with pytest.raises(InputError) as exc:
        call(*args)
    return exc.value.problems


def test_it_stores_one_item_per_conll_document_with_the_contract_metrics(coref_study):
    assert conll_import(coref_study) == 2
    items = list(coref_study.items.order_by("position"))
    assert [i.external_id for i in items] == ["news-000", "wiki-001"]
    pairs = read_gold_and_system(GOLD_CONLL, SYSTEM_CONLL, format="conll2012")
    for item, (gold, system) in zip(items, pairs, strict=True):
        assert set(item.metrics) == set(COREF_METRICS)
        assert item.metrics == pytest.approx(coref_metrics(gold, system), abs=1e-12)
    # gold {Marie, her} {her brother, He}; system {Marie, her, He} {her brother}
    assert (items[0].metrics["MUC_R"], items[0].metrics["MUC_P"]) == pytest.approx((0.5, 0.5))


def test_it_stores_the_six_error_features(coref_study):
    conll_import(coref_study)
    pairs = read_gold_and_system(GOLD_CONLL, SYSTEM_CONLL, format="conll2012")
    for item, (gold, system) in zip(coref_study.items.order_by("position"), pairs, strict=True):
        expected = {k.removeprefix("feature:"): v for k, v in error_features(gold, system).items()}
        assert item.features == expected
        assert set(item.features) == {"border", "type", "noise", "silence",
                                      "irrelevant_chains", "chain_absence"}
    assert coref_study.items.get(external_id="wiki-001").features["border"] == 1


def test_it_stores_the_passage_and_both_conll_annotations(coref_study):
    conll_import(coref_study)
    item = coref_study.items.get(external_id="news-000")
    assert item.text == "Marie met her brother . He smiled ."
    annotation = item.annotation
    assert annotation["format"] == "conll2012"
    assert annotation["sentences"] == [["Marie", "met", "her", "brother", "."], ["He", "smiled", "."]]
    assert annotation["gold"]["entities"] == [[[0, 0, 1], [0, 2, 3]], [[0, 2, 4], [1, 0, 1]]]
    assert annotation["system"]["entities"] == [[[0, 0, 1], [0, 2, 3], [1, 0, 1]], [[0, 2, 4]]]


def test_it_stores_rucoco_items_with_split_antecedent_lea(coref_study):
    assert rucoco_import(coref_study) == 2
    items = list(coref_study.items.order_by("position"))
    assert [i.external_id for i in items] == ["r1", "r2"]
    pairs = read_gold_and_system(json.dumps(GOLD_RUCOCO), json.dumps(SYSTEM_RUCOCO),
                                 format="rucoco-json")
    for item, (gold, system) in zip(items, pairs, strict=True):
        assert set(item.metrics) == set(COREF_METRICS) | set(SPLIT_LEA_METRICS)
        assert item.metrics == pytest.approx(coref_metrics(gold, system), abs=1e-12)
    assert items[0].text == TEXT
    assert items[0].annotation["text"] == TEXT
    assert items[0].annotation["gold"]["includes"] == [[], [], [0, 1]]
    assert items[1].metrics["LEA_split_F1"] == pytest.approx(1.0)


def test_it_names_unnamed_rucoco_documents_after_the_gold_file(coref_study):
    gold = [{k: v for k, v in d.items() if k != "name"} for d in GOLD_RUCOCO]
    system = [{k: v for k, v in d.items() if k != "name"} for d in SYSTEM_RUCOCO]
    rucoco_import(coref_study, gold, system)
    assert list(coref_study.items.values_list("external_id", flat=True)) == ["gold#1", "gold#2"]


def test_it_reports_different_document_counts_and_imports_nothing(coref_study):
    problems = problems_of(rucoco_import, coref_study, GOLD_RUCOCO, SYSTEM_RUCOCO[:1])
    assert [(p.file, p.message) for p in problems] == [
        ("sys.json", "gold has 2 documents, system has 1")]
    assert Item.objects.count() == 0


def test_it_reports_different_document_names_in_one_problem(coref_study):
    system = SYSTEM_CONLL.replace("(wiki); part 001", "(blog); part 001").replace("wiki 0", "blog 0")
    problems = problems_of(conll_import, coref_study, GOLD_CONLL, system)
    assert len(problems) == 1
    assert "missing from the system: wiki-001" in problems[0].message
    assert "not in the gold: blog-001" in problems[0].message
    renamed = [dict(SYSTEM_RUCOCO[0], name="other"), SYSTEM_RUCOCO[1]]
    problems = problems_of(rucoco_import, coref_study, GOLD_RUCOCO, renamed)
    assert len(problems) == 1 and "'r1' vs system 'other'" in problems[0].message
    assert Item.objects.count() == 0


def test_it_lists_every_malformed_conll_line_of_both_files(coref_study):
    gold = GOLD_CONLL.replace("news 0 1 met -", "news 0 1 met 4)").replace("wiki 0 5 was -", "wiki 0 5 (8")
    system = SYSTEM_CONLL.replace("news 0 4 . -", "news 0 4 . (9")
    problems = problems_of(conll_import, coref_study, gold, system)
    assert [(p.file, p.line, p.column) for p in problems] == [
        ("gold.conll", 3, 14), ("gold.conll", 18, 10), ("sys.conll", 6, 12)]
    assert "closing bracket 4) without an opening one" in problems[0].message
    assert "unclosed mention (8" in problems[1].message
    assert "unclosed mention (9" in problems[2].message
    assert Item.objects.count() == 0


def test_it_reports_offsets_outside_the_text_and_missing_includes_together(coref_study):
    gold = [dict(GOLD_RUCOCO[0], entities=[[[0, 5], [34, 99]], [[10, 14]], [[20, 24]]]),
            dict(GOLD_RUCOCO[1], includes=[[7]])]
    problems = problems_of(rucoco_import, coref_study, gold, SYSTEM_RUCOCO)
    messages = [p.message for p in problems]
    assert len(messages) == 2
    assert "entities[0][1]: span [34, 99] lies outside the text (length 39)" in messages[0]
    assert "includes[0] points to a missing entity 7" in messages[1]
    assert all(p.file == "gold.json" and p.line == 1 for p in problems)
    assert Item.objects.count() == 0


def test_it_refuses_document_names_already_in_the_study(coref_study):
    conll_import(coref_study)
    problems = problems_of(conll_import, coref_study)
    assert [p.message for p in problems] == [
        "document 1: 'news-000' is already an item of this study",
        "document 2: 'wiki-001' is already an item of this study"]
    assert coref_study.items.count() == 2


def test_it_applies_the_size_limit_to_both_files(coref_study, settings):
    settings.CONCORD_MAX_UPLOAD_BYTES = len(GOLD_CONLL.encode()) - 1
    problems = problems_of(conll_import, coref_study)
    assert [p.file for p in problems] == ["gold.conll", "sys.conll"]
    assert all("the limit is" in p.message for p in problems)
    assert Item.objects.count() == 0


def test_it_refuses_a_study_that_does_not_show_coreference_passages(make_study, alice):
    study = make_study(alice, slug="pairs", preset="similarity-1-5", items=None, open=False)
    problems = problems_of(conll_import, study)
    assert "shows 'pair' items" in problems[0].message
    assert Item.objects.count() == 0


def test_the_command_imports_coreference_items(coref_study, tmp_path, capsys):
    gold, system = tmp_path / "gold.conll", tmp_path / "sys.conll"
    gold.write_text(GOLD_CONLL)
    system.write_text(SYSTEM_CONLL)
    call_command("import_items", "coref", str(gold), "--system", str(system), "--format", "conll2012")
    assert "Imported 2 items" in capsys.readouterr().out
    assert coref_study.items.count() == 2


def test_the_command_exits_non_zero_with_every_problem(coref_study, tmp_path):
    gold, system = tmp_path / "gold.conll", tmp_path / "sys.conll"
    gold.write_text(GOLD_CONLL.replace("news 0 1 met -", "news 0 1 met 7)"))
    system.write_text(SYSTEM_CONLL.replace("news 0 4 . -", "news 0 4 . (9"))
    with pytest.raises(CommandError) as exc:
        call_command("import_items", "coref", str(gold), "--system", str(system),
                     "--format", "conll2012")
    message = str(exc.value)
    assert "2 problem(s); nothing was imported" in message
    assert f"{gold}:3: column 14: closing bracket 7) without an opening one" in message
    assert f"{system}:6: column 12: unclosed mention (9" in message
    assert Item.objects.count() == 0


def test_the_command_imports_what_the_scorer_reads_and_prints_the_warnings(coref_study, tmp_path,
                                                                           capsys):
    gold, system = tmp_path / "gold.conll", tmp_path / "sys.conll"
    # A stray token in the gold's coreference column, parts without "|" and a short line in the
    # system's: the CoNLL scorer reads both files, and so do we.
    gold.write_text(GOLD_CONLL.replace("news 0 1 met -", "news 0 1 met *"))
    system.write_text(SYSTEM_CONLL.replace("news 0 1 met -", "met -"))
    call_command("import_items", "coref", str(gold), "--system", str(system), "--format", "conll2012")
    out = capsys.readouterr()
    assert "Imported 2 items" in out.out
    assert "2 warning(s)" in out.err
    assert f"{gold}:3: column 14: ignored '*' in the coreference column" in out.err
    assert f"{system}:3: column 1: 2 columns where the first token line has 5" in out.err
    assert coref_study.items.count() == 2


def test_the_command_needs_format_with_system(coref_study, tmp_path):
    gold = tmp_path / "gold.conll"
    gold.write_text(GOLD_CONLL)
    with pytest.raises(CommandError, match="--system and --format go together"):
        call_command("import_items", "coref", str(gold), "--system", str(gold))


HOSTILE = [{"name": "x", "text": "<script>alert(1)</script> said <b>Ann</b>.",
            "entities": [[[0, 25], [36, 39]]]}]


def test_the_annotator_sees_both_annotations_with_numbered_chains_and_a_legend(
        coref_study, alice_client):
    conll_import(coref_study)
    html = alice_client.get("/studies/coref/preview/").content.decode()
    assert html.count('class="coref-view"') == 2
    assert "Gold annotation" in html and "System annotation" in html
    # gold chains 1 {Marie, her}, 2 {her brother, He}; the system's merged chain takes number 1
    assert ('<span class="mention chain-1"><span class="bracket">[</span>Marie<span class="bracket">]'
            '</span><sub class="chain-no">1</sub></span>') in html
    assert "<strong class=\"chain-name\">Chain 2</strong>:" in html
    assert "“Marie”, “her”, “He”" in html  # the system's legend


def test_the_annotator_sees_only_the_system_annotation_when_the_gold_is_hidden(
        coref_study, alice_client):
    coref_study.show_gold = False
    coref_study.save()
    conll_import(coref_study)
    html = alice_client.get("/studies/coref/preview/").content.decode()
    assert html.count('class="coref-view"') == 1
    assert "System annotation" in html and "Gold annotation" not in html


def test_annotated_text_is_escaped(coref_study, alice_client):
    rucoco_import(coref_study, HOSTILE, HOSTILE)
    html = alice_client.get("/studies/coref/preview/").content.decode()
    assert "<script>alert" not in html and "<b>Ann" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "“&lt;b&gt;Ann”" in html or "“&lt;script&gt;alert(1)&lt;/script&gt;”" in html


def test_the_browser_imports_coreference_documents_and_shows_the_warnings(coref_study, alice_client):
    from django.core.files.uploadedfile import SimpleUploadedFile

    reply = alice_client.post(f"/studies/{coref_study.slug}/items/coreference/", {
        "gold": SimpleUploadedFile("gold.conll", GOLD_CONLL.replace("news 0 1 met -",
                                                                    "news 0 1 met *").encode()),
        "system": SimpleUploadedFile("sys.conll", SYSTEM_CONLL.encode()),
        "format": "conll2012"}, follow=True)
    page = reply.content.decode()
    assert "Imported 2 coreference items from gold.conll and sys.conll." in page
    assert "1 warning(s)" in page and "ignored &#x27;*&#x27; in the coreference column" in page
    assert coref_study.items.count() == 2


def test_the_browser_lists_every_problem_of_both_files_and_imports_nothing(coref_study,
                                                                            alice_client):
    from django.core.files.uploadedfile import SimpleUploadedFile

    reply = alice_client.post(f"/studies/{coref_study.slug}/items/coreference/", {
        "gold": SimpleUploadedFile("gold.conll", GOLD_CONLL.replace("news 0 1 met -",
                                                                    "news 0 1 met 4)").encode()),
        "system": SimpleUploadedFile("sys.conll", SYSTEM_CONLL.replace(
            "news 0 4 . -", "news 0 4 . (9").encode()),
        "format": "conll2012"})
    assert reply.status_code == 400
    assert b"closing bracket 4) without an opening one" in reply.content
    assert b"unclosed mention (9" in reply.content
    assert coref_study.items.count() == 0


# --- a large upload goes to the background import job (issue 23, point 17) ---------------------


def many_documents(n: int, *, system: bool) -> bytes:
    """n small CoNLL documents (the bench's): 5 000 took over a minute inside a request."""
    from bench.coref_import import conll

    return conll(n, system=system)


@pytest.fixture
def eager():
    from config.celery import app

    before = (app.conf.task_always_eager, app.conf.task_eager_propagates)
    app.conf.task_always_eager = app.conf.task_eager_propagates = True
    yield
    app.conf.task_always_eager, app.conf.task_eager_propagates = before


def post_coref(client, study, gold: bytes, system: bytes):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return client.post(f"/studies/{study.slug}/items/coreference/",
                       {"gold": SimpleUploadedFile("gold.conll", gold),
                        "system": SimpleUploadedFile("sys.conll", system),
                        "format": "conll2012"})


def test_a_large_conll_upload_is_answered_with_a_job_page_not_imported_in_the_request(
        coref_study, alice_client, settings, tmp_path, django_capture_on_commit_callbacks):
    """Issue 23, point 17: more documents than CONCORD_COREF_SYNC_MAX_DOCUMENTS (here 5 000 >
    200, 2.6 MB: over a minute of metrics) are handed to the import job: the request keeps the
    two files and answers with the job's page; nothing is parsed or stored in it."""
    from imports.models import ImportJob

    settings.IMPORTS_DIR = tmp_path / "imports"
    gold, system = many_documents(5000, system=False), many_documents(5000, system=True)
    assert len(gold) < settings.CONCORD_MAX_UPLOAD_BYTES
    with django_capture_on_commit_callbacks(execute=False) as sent:
        response = post_coref(alice_client, coref_study, gold, system)
    job = ImportJob.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/studies/{coref_study.slug}/imports/{job.pk}/"
    assert (job.what, job.status, job.options["coref_format"]) == ("items", "queued", "conll2012")
    assert job.options["maps"] == {"system": "sys.conll"} and job.filename == "gold.conll"
    assert len(sent) == 1  # the task, sent once the request's transaction commits
    assert Item.objects.filter(study=coref_study).count() == 0  # nothing imported in the request
    kept = tmp_path / "imports" / job.folder
    assert (kept / "data").read_bytes() == gold and (kept / "system").read_bytes() == system
    page = alice_client.get(response["Location"]).content.decode()
    assert "Import coreference items: gold.conll and sys.conll" in page


def test_the_job_imports_what_the_request_would_have(coref_study, alice_client, settings,
                                                     tmp_path, eager,
                                                     django_capture_on_commit_callbacks):
    from imports.models import ImportJob

    settings.IMPORTS_DIR = tmp_path / "imports"
    settings.CONCORD_COREF_SYNC_MAX_DOCUMENTS = 1  # the two documents above go to the job
    with django_capture_on_commit_callbacks(execute=True):
        response = post_coref(alice_client, coref_study, GOLD_CONLL.encode(),
                              SYSTEM_CONLL.encode())
    job = ImportJob.objects.get()
    assert (job.status, job.summary) == ("done", {"items": 2, "warnings": []}), job.error
    items = Item.objects.filter(study=coref_study).order_by("position")
    assert list(items.values_list("external_id", flat=True)) == ["news-000", "wiki-001"]
    pairs = read_gold_and_system(GOLD_CONLL, SYSTEM_CONLL, format="conll2012")
    for item, (g, s) in zip(items, pairs, strict=True):
        assert item.metrics == pytest.approx(coref_metrics(g, s))
    page = alice_client.get(response["Location"]).content.decode()
    assert "Imported 2 coreference items from gold.conll and sys.conll." in page
    assert list((tmp_path / "imports").rglob("*")) == []  # the kept files went with the job


def test_a_small_conll_upload_is_still_imported_at_once(coref_study, alice_client):
    from imports.models import ImportJob

    response = post_coref(alice_client, coref_study, GOLD_CONLL.encode(), SYSTEM_CONLL.encode())
    assert response["Location"] == f"/studies/{coref_study.slug}/"
    assert not ImportJob.objects.exists()
    assert Item.objects.filter(study=coref_study).count() == 2
