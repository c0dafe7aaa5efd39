"""Random control pairs of a sentence-pair study, built from its own sentences."""

from __future__ import annotations

import re

import numpy as np
from django.contrib.auth.models import User
from django.db import transaction

from core.items import ItemRow
from core.metrics.controls import random_control_pairs
from core.problems import InputError, Problem

from ..item_metrics import pair_rows_score
from ..models import Item, Study
from .lifecycle import study_event, study_writable


@transaction.atomic
def controls_generate(*, study: Study, n: int, seed: int | None = None,
                      user: User | None = None) -> int:
    """Add `n` random control pairs built from the study's own sentences (Solomon et al. 2021, §4).

    The sentences come from the main items (controls included) only, never from a screening or
    check item.

    Each control joins the `text_a` of one item with the `text_b` of another, never a sentence
    with itself or with its own partner, never repeating a pair of the study (controls
    included); draws are uniform and reproducible from `seed` (default: the study's seed).
    Controls get ids `control-001`, … (after the highest existing one), `is_control`, their
    similarity metrics and sentiment as imported pairs do, and meta `control_of_a` /
    `control_of_b`: the ids of the items their sentences come from.
    """
    study_writable(study)
    if study.status != Study.Status.DRAFT or study.display != Study.Display.PAIR:
        raise InputError([Problem(study.slug, None, None,
                                  "controls can only be added to a sentence-pair study in draft")])
    if not 1 <= n <= 1000:
        raise InputError([Problem(study.slug, None, "n", "generate between 1 and 1000 controls")])
    study = Study.objects.select_for_update().get(pk=study.pk)  # one generation at a time
    # Main items only: a screening or check item's sentences are known answers shown to every
    # participant, and a control built from one would show that sentence again, elsewhere.
    items = list(study.items.filter(role=Item.Role.MAIN).order_by("is_control", "position")
                 .values_list("external_id", "text_a", "text_b"))
    try:
        drawn = random_control_pairs(items, n, np.random.default_rng(
            study.seed if seed is None else seed))
    except ValueError as exc:
        raise InputError([Problem(study.slug, None, "n", str(exc))]) from None
    ids = {external_id for external_id, _, _ in items}
    numbers = [int(i[8:]) for i in ids if re.fullmatch(r"control-\d+", i)]
    first = max(numbers, default=0) + 1
    rows = [ItemRow(line=0, external_id=f"control-{first + k:03d}", text_a=a, text_b=b,
                    is_control=True, meta={"control_of_a": str(src_a), "control_of_b": str(src_b)})
            for k, (a, b, (src_a, src_b)) in enumerate(drawn)]
    pair_rows_score(rows)
    start = study.items.count()
    Item.objects.bulk_create(
        Item(study=study, external_id=row.external_id, position=start + k, text_a=row.text_a,
             text_b=row.text_b, is_control=True, metrics=row.metrics, meta=row.meta)
        for k, row in enumerate(rows)
    )
    study_event(study=study, user=user, action="controls", count=len(rows),
                seed=study.seed if seed is None else seed)
    return len(rows)
