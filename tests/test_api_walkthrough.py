"""docs/api.md's walk-through of a whole study is run as written, against a live server.

The Python block of the section "A whole study through the API" is taken from the page and
executed with a token of its owner; the Celery tasks it starts (the run, the export) execute in
the server's thread (eager), so the test needs no worker. What the script leaves behind is then
checked against the database.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[1] / "docs" / "api.md"

pytestmark = pytest.mark.django_db(transaction=True)


def walkthrough() -> str:
    section = DOC.read_text().split("## A whole study through the API", 1)[1]
    (code,) = re.findall(r"```python\n(.*?)```", section.split("\n## ", 1)[0], flags=re.S)[:1]
    return code


@pytest.fixture
def eager_tasks():
    from config.celery import app

    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = before


def test_the_documented_walkthrough_runs_a_whole_study(live_server, alice, django_user_model,
                                                       eager_tasks, monkeypatch, tmp_path,
                                                       capsys):
    from studies.models import Membership, Participant, Study
    from tokens.services import token_create

    django_user_model.objects.create_user("colleague", "c@example.org", "colleague-pw-1")
    _, key = token_create(user=alice, name="walkthrough", days=7)
    monkeypatch.setenv("CONCORD_URL", live_server.url)
    monkeypatch.setenv("CONCORD_TOKEN", key)
    monkeypatch.chdir(tmp_path)
    # Our own documentation, run as written: that is the point of this test.
    exec(compile(walkthrough(), str(DOC), "exec"), {"__name__": "walkthrough"})  # noqa: S102

    study = Study.objects.get(slug="fluency-pilot")
    assert study.status == "closed" and study.items.count() == 4
    assert Membership.objects.get(study=study, user__username="colleague").role == "viewer"
    imported = Participant.objects.filter(study=study, source="import")
    assert sorted(imported.values_list("external_id", flat=True)) == ["p1", "p2"]
    assert Participant.objects.filter(study=study, revoked_at__isnull=False).count() == 1
    out = capsys.readouterr().out
    # p1 and p2 rate 5 1 4 2 and 4 2 5 1: krippendorff.alpha(level_of_measurement="ordinal")
    # gives 0.65 on that matrix.
    assert re.search(r"ordinal alpha 0\.65\d* 95 % CI .* on 4 items", out), out
    lines = (tmp_path / "responses.csv").read_text().splitlines()
    assert lines[0].startswith("annotator,item") and len(lines) == 1 + 8
