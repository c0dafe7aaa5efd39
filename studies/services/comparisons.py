"""The comparisons of a study with comparative questions (docs/comparisons.md): built from the
systems' outputs of each source (all pairs, pairs a number of times, or best–worst tuples), and
the role of the outputs they compare.

A comparison is an item whose ``outputs`` list other items of the study (their external ids, in
its canonical order); every comparative question is asked about it. The outputs stay main items
(assigned and rated on their own) while the study has a scale question, and become output items
(shown only inside comparisons, never assigned on their own) when it has none.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Max

from core.comparative import MAX_OUTPUTS, MIN_OUTPUTS
from core.items import MAX_ITEM_ID
from core.problems import InputError, Problem
from core.stats.comparisons import bws_design, pair_design

from ..models import Item, Question, Study
from .lifecycle import study_event, study_writable

DESIGNS = ("pairs", "tuples")
MAX_PER_PAIR = 50
MAX_TUPLES = 10_000  # tuples of one source
# At most this many comparisons in one design (a study of 50 systems × 80 sources, all pairs,
# has 98 000).
MAX_COMPARISONS = 200_000


def _refuse(study: Study, column: str | None, message: str) -> InputError:
    return InputError([Problem(study.slug, None, column, message)])


def comparisons_changeable(study: Study) -> None:
    """Refuse to replace a study's comparisons once it has answers (a draft without answers, or
    a study never answered, may change them); raise `InputError`."""
    study_writable(study)
    if study.status != Study.Status.DRAFT and Question.objects.filter(
            study=study, answers__isnull=False).exists():
        raise _refuse(study, None, "the comparisons cannot change: the study has been opened "
                                   "and has answers (clone it to build another design)")
    if Item.objects.filter(study=study, responses__isnull=False).exclude(outputs=[]).exists():
        raise _refuse(study, None, "the comparisons cannot change: some have answers "
                                   "(imported responses)")


def study_outputs(study: Study) -> dict[str, list[str]]:
    """{source: the external ids of its outputs}: the main (or output) items with a system, of
    each source in the order the sources first appear, each source's ordered by system name."""
    rows = (study.items.filter(role__in=(Item.Role.MAIN, Item.Role.OUTPUT), outputs=[])
            .exclude(system="").order_by("position")
            .values_list("source", "system", "external_id"))
    by_source: dict[str, list[tuple[str, str]]] = {}
    for source, system, external_id in rows:
        by_source.setdefault(source, []).append((system, external_id))
    return {source: [eid for _, eid in sorted(outputs, key=lambda o: o[0])]
            for source, outputs in by_source.items()}


def _check(study: Study, kind: str, per_pair: int, size: int, n_tuples: int | None,
           seed: int) -> None:
    if kind not in DESIGNS:
        raise _refuse(study, "kind", f"the design is pairs or tuples, not {str(kind)[:20]!r}")
    for name, value, low, high in (("per_pair", per_pair, 1, MAX_PER_PAIR),
                                   ("size", size, MIN_OUTPUTS["bws"], MAX_OUTPUTS["bws"]),
                                   ("n_tuples", n_tuples, 1, MAX_TUPLES)):
        if name == "n_tuples" and value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise _refuse(study, name, f"{name} is a whole number from {low} to {high}, not "
                                       f"{str(value)[:20]!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or abs(seed) > 2**62:
        raise _refuse(study, "seed", "the seed is a whole number")


def _ids(prefix: str, count: int, taken: set[str]) -> Iterable[str]:
    """``count`` new ids ``<prefix>-1``, ``<prefix>-2``, … none of them in ``taken``."""
    n = 0
    for _ in range(count):
        n += 1
        while f"{prefix}-{n}" in taken:
            n += 1
        taken.add(f"{prefix}-{n}")
        yield f"{prefix}-{n}"


@transaction.atomic
def comparisons_generate(*, study: Study, user: User | None, kind: str = "pairs",
                         per_pair: int = 1, size: int = 4, n_tuples: int | None = None,
                         seed: int = 0) -> int:
    """Build the study's comparisons from the systems' outputs of each source, replacing the
    comparisons it had (an attention check with outputs is kept); return how many were built.

    ``kind`` "pairs": every pair of a source's outputs ``per_pair`` times
    (`core.stats.comparisons.pair_design`); "tuples": best–worst tuples of ``size`` outputs,
    ``n_tuples`` per source (default twice the source's outputs), every output in about the same
    number of tuples (`bws_design`, Kiritchenko and Mohammad 2017). A source with too few
    outputs gets none. Seeded: the same seed and outputs give the same design. Ids are
    ``cmp-<source>-<n>`` (``cmp-<n>`` for outputs without a source). Allowed while the study is
    a draft, or while it has no answer; recorded in the history.
    """
    _check(study, kind, per_pair, size, n_tuples, seed)
    study = Study.objects.select_for_update().get(pk=study.pk)  # one design at a time
    comparisons_changeable(study)
    sources = study_outputs(study)
    if not sources:
        raise _refuse(study, None, "no outputs to compare: comparisons are built from items "
                                   "with a system (and a source: one set of comparisons per "
                                   "source)")
    need = 2 if kind == "pairs" else size
    usable = {source: outputs for source, outputs in sources.items() if len(outputs) >= need}
    if not usable:
        raise _refuse(study, "size" if kind == "tuples" else None,
                      f"no source has {need} outputs (items with a system) to compare")
    total = 0
    for outputs in usable.values():
        n = len(outputs)
        total += (n * (n - 1) // 2 * per_pair if kind == "pairs"
                  else (n_tuples if n_tuples is not None else 2 * n))
    if total > MAX_COMPARISONS:
        raise _refuse(study, "per_pair" if kind == "pairs" else "n_tuples",
                      f"this design would build {total} comparisons; at most "
                      f"{MAX_COMPARISONS}")
    replaced = _delete_comparisons(study)
    rng = np.random.default_rng(seed)
    taken = set(study.items.values_list("external_id", flat=True))
    start = (study.items.aggregate(m=Max("position"))["m"] or 0) + 1
    meta = {"design": kind, "seed": seed}
    items: list[Item] = []
    for source, outputs in usable.items():
        if kind == "pairs":
            design = pair_design(len(outputs), per_pair=per_pair, rng=rng)
        else:
            design = bws_design(len(outputs), n_tuples=n_tuples, size=size, rng=rng)
        prefix = f"cmp-{source[:MAX_ITEM_ID - 20]}" if source else "cmp"
        for external_id, row in zip(_ids(prefix, len(design), taken), design, strict=True):
            items.append(Item(study=study, external_id=external_id,
                              position=start + len(items), source=source, role=Item.Role.MAIN,
                              outputs=[outputs[int(i)] for i in row], meta=dict(meta)))
    Item.objects.bulk_create(items, batch_size=5_000)
    outputs_roles_sync(study)
    study_event(study=study, user=user, action="comparisons", count=len(items), design=kind,
                seed=seed, replaced=replaced,
                **({"per_pair": per_pair} if kind == "pairs"
                   else {"size": size, "n_tuples": n_tuples or "2N"}),
                skipped=sorted(set(sources) - set(usable))[:20])
    return len(items)


def _delete_comparisons(study: Study) -> int:
    """Delete the study's comparisons but its attention checks; return how many."""
    old = Item.objects.filter(study=study).exclude(outputs=[]).exclude(role=Item.Role.CHECK)
    count = old.count()
    old.delete()
    return count


def outputs_roles_sync(study: Study) -> int:
    """Give the outputs of the study's comparisons their role: output (shown only inside
    comparisons) when the study has no scale question, main (assigned and rated on their own)
    when it has one; return how many items changed. Screening and check items keep theirs."""
    compared: set[str] = set()
    for outputs in study.items.exclude(outputs=[]).values_list("outputs", flat=True):
        compared.update(outputs)
    has_scale = study.questions.filter(kind=Question.Kind.SCALE).exists()
    wanted, other = ((Item.Role.MAIN, Item.Role.OUTPUT) if has_scale
                     else (Item.Role.OUTPUT, Item.Role.MAIN))
    changed = study.items.filter(role=other, external_id__in=compared, outputs=[]).update(
        role=wanted)
    if has_scale:  # an output no longer compared is a main item again
        changed += study.items.filter(role=Item.Role.OUTPUT).update(role=Item.Role.MAIN)
    else:
        changed += (study.items.filter(role=Item.Role.OUTPUT).exclude(external_id__in=compared)
                    .update(role=Item.Role.MAIN))
    return changed
