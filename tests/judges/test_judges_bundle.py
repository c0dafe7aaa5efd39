"""Judges in the methods bundle: a bundle with judges replays into a study with the same judges
and answers; a bundle without judges holds no judge member and replays as before."""

from __future__ import annotations

import io
import zipfile

import pytest
from django.core.management import call_command

from exports.services import export_open
from imports.bundles import bundle_import
from judges.models import Judge, JudgeAnswer
from judges.selectors import judges_for_analysis
from judges.services import judge_answers_import, judge_answers_upload, judge_create
from studies.models import Study

pytestmark = pytest.mark.django_db


def bundle(study: Study) -> bytes:
    call_command("analyze", study.slug, "--output", "/dev/null", stdout=io.StringIO())
    return b"".join(export_open(study=study, what="bundle").chunks)


def members(data: bytes) -> set[str]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return set(archive.namelist())


def test_a_bundle_with_judges_replays_the_same_judges_and_answers(demo_studies):
    user, demos = demo_studies
    study = demos[0].study
    key = study.primary_question.key
    items = list(study.items.filter(outputs=[]).values_list("external_id", flat=True)[:30])
    values = study.primary_question.values
    rows = "".join(f"{i},{values[n % len(values)]},{key},{r},why {n}\n"
                   for r in ("1", "2") for n, i in enumerate(items))
    judge_answers_upload(study=study, name="=gpt, judge", model="gpt-4o", temperature=0.7,
                         date="2025-06-01", notes="line one\nline two",
                         data=("item,value,question,run,rationale\n" + rows).encode(),
                         filename="g.csv")
    judge_create(study=study, name="no runs yet", prompt="v3")
    data = bundle(study)
    assert {"judges.json", "judges.csv"} <= members(data)
    done = bundle_import(data=data, filename="b.zip", owner=user, slug="replayed")
    assert done.parts == {"judges": 2, "judge_answers": 2 * len(items)}
    replayed = Study.objects.get(slug="replayed")
    old_info, old_answers = judges_for_analysis(study=study)
    new_info, new_answers = judges_for_analysis(study=replayed)
    assert new_info == old_info
    assert [(a.judge, a.run, a.question, a.item_ids, list(a.value), a.rationale)
            for a in new_answers] == [
        (a.judge, a.run, a.question, a.item_ids, list(a.value), a.rationale)
        for a in old_answers]


def test_a_comparative_judge_replays_with_its_judgments(alice):
    from tests.comparative import comparative_study, comparison_add

    study = comparative_study(alice, slug="cmp-judged")
    comparison_add(study, "c-ab", ["d1-a", "d1-b"])
    comparison_add(study, "c-cd", ["d1-c", "=d1-d"])
    judge_answers_upload(study=study, name="gpt", filename="c.csv", data=(
        b"items,choice,strength,run\nd1-b|d1-a,d1-a,much,1\n'=d1-d|d1-c,tie,,1\n"
        b"d1-a|d1-b,d1-b,slightly,2\n"))
    study.status = Study.Status.CLOSED
    study.save()
    csv = b"".join(export_open(study=study, what="judges", fmt="csv").chunks)
    other = comparative_study(alice, slug="cmp-again")
    comparison_add(other, "c-ab", ["d1-a", "d1-b"])
    comparison_add(other, "c-cd", ["d1-c", "=d1-d"])
    judge = judge_create(study=other, name="gpt")
    judge_answers_import(study=other, judge=judge, data=csv, filename="judges.csv")
    old = judges_for_analysis(study=study)[1]
    new = judges_for_analysis(study=other)[1]
    assert [(a.run, a.item_ids, list(a.value), a.choices) for a in new] == [
        (a.run, a.item_ids, list(a.value), a.choices) for a in old]
    assert old[0].choices[0]["strength"] == "much"


def test_a_bundle_without_judges_has_no_judge_member_and_replays(demo_studies):
    user, demos = demo_studies
    data = bundle(demos[0].study)
    assert not {"judges.json", "judges.csv"} & members(data)
    done = bundle_import(data=data, filename="b.zip", owner=user, slug="replayed")
    assert done.parts == {} and not Judge.objects.filter(study__slug="replayed").exists()
    assert not JudgeAnswer.objects.filter(run__judge__study__slug="replayed").exists()
