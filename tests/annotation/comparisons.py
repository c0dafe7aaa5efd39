"""Comparison studies built with the ORM for the annotator-side tests of comparative questions
(issue 25): output items with a system and a source, comparisons listing them, questions of the
three kinds."""

from __future__ import annotations

from typing import Any

from studies.models import Item, Question, Study
from studies.services import study_open
from tests.conftest import study_make

SYSTEMS = ("alpha", "beta", "gamma", "delta")


def comparison_study(owner: Any, *, slug: str = "cmp", questions: list[dict[str, Any]],
                     size: int = 2, sources: int = 2, scale: bool = False,
                     check: dict[str, float] | None = None, open: bool = True) -> Study:
    """A study whose items are the outputs of ``size`` systems for each of ``sources`` sources
    (role OUTPUT, or MAIN rated by the preset's scale question with ``scale``), one comparison
    per source over them (canonical order: by system), and ``questions`` (``{"key", "kind",
    "comparison", …}``). ``check``: one more comparison, an attention check with that gold."""
    study = study_make(owner, slug=slug, items=None, open=False)
    if not scale:
        study.questions.all().delete()
    position = 0
    comparisons = []
    for s in range(1, sources + 1):
        outputs = []
        for system in SYSTEMS[:size]:
            external_id = f"s{s}-{system}"
            Item.objects.create(
                study=study, external_id=external_id, position=position, system=system,
                source=f"src{s}", text=f"Source {s}, answer of {system}: <b>bold</b> & more.",
                role=Item.Role.MAIN if scale else Item.Role.OUTPUT)
            position += 1
            outputs.append(external_id)
        comparisons.append((f"cmp-src{s}-1", f"src{s}", outputs, Item.Role.MAIN, {}))
    if check is not None:
        comparisons.append(("cmp-check", "src1", comparisons[0][2], Item.Role.CHECK, check))
    for external_id, source, outputs, role, gold in comparisons:
        Item.objects.create(study=study, external_id=external_id, position=position,
                            source=source, text=f"The prompt of {source}.", outputs=outputs,
                            role=role, gold=gold, meta={"design": "pairs", "seed": 0})
        position += 1
    start = study.questions.count()
    for n, spec in enumerate(questions):
        spec = {"values": [], "labels": {}, "prompt": "", **spec}
        Question.objects.create(study=study, position=start + n, **spec)
    if open:
        study_open(study=study)
    study.refresh_from_db()
    return study
