"""A study with comparative questions, for the tests of their files (import, exports, bundle).

Built through the ORM where the study's own services do not make comparative questions yet:
the questions' kind and options, and comparisons as items with outputs (CONTRACT of issue 25).
"""

from __future__ import annotations

from typing import Any

from studies.models import Item, Question, Study

OUTPUTS_CSV = (
    "id,text,system,source\n"
    "d1-a,Summary one by A,sys-A,doc-1\n"
    "d1-b,Summary one by B,sys-B,doc-1\n"
    "d1-c,Summary one by C,sys-C,doc-1\n"
    "=d1-d,Summary one by D,sys-D,doc-1\n"
)


def comparative_study(owner: Any, *, slug: str = "cmp", scale: bool = False,
                      questions: tuple[tuple[str, str, dict[str, Any]], ...] = (
                          ("better", "pairwise", {"ties": True, "strength": True}),),
                      items: str = OUTPUTS_CSV) -> Study:
    """A draft study over four systems' outputs of one source, with the comparative
    ``questions`` (key, kind, options) and, with ``scale``, the preset's scale question first."""
    from studies.services import items_import, study_create

    study = study_create(owner=owner, slug=slug, title=slug.upper(), preset="likert-1-5")
    if not scale:
        study.questions.all().delete()
    for n, (key, kind, options) in enumerate(questions, start=1):
        Question.objects.create(study=study, key=key, position=n, kind=kind,
                                comparison=options, values=[], labels={}, prompt=key)
    items_import(study=study, data=items.encode(), filename="items.csv")
    return Study.objects.get(pk=study.pk)


def comparison_add(study: Study, external_id: str, outputs: list[str]) -> Item:
    """Add a comparison of ``outputs`` (canonical order) to ``study``."""
    last = study.items.order_by("-position").values_list("position", flat=True).first() or 0
    return Item.objects.create(study=study, external_id=external_id, position=last + 1,
                               outputs=outputs, source="doc-1", meta={"design": "pairs"})
