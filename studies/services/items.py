"""Items of a draft study: imported from a file (items, or coreference documents), edited and
deleted."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import PurePath
from typing import Any, cast

from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection, connections, router, transaction

from core.items import (
    ItemRow,
    coref_annotation,
    coref_item_id,
    coref_plain_text,
    item_id_problem,
    items_parse,
)
from core.metrics.coref import coref_metrics
from core.metrics.features import error_features
from core.metrics.formats import FORMATS, Format, conll_tokens, read_gold_and_system
from core.metrics.similarity import SIMILARITY_METRICS
from core.problems import Collector, InputError, Problem
from core.tabular import decode

from ..bulk import items_import_copy
from ..item_metrics import pair_rows_score, sentiment_problems
from ..models import Item, Question, Study
from .comparisons import outputs_roles_sync
from .lifecycle import study_event, study_writable


def items_import(*, study: Study, data: bytes, filename: str, max_bytes: int | None = None,
                 progress: Callable[[float, str], None] | None = None,
                 user: User | None = None) -> int:
    """Validate an item file completely, then store every item in one transaction.

    `max_bytes` is the size limit (the browser's upload limit by default). On PostgreSQL the
    file is checked row by row and streamed with COPY (`studies.bulk`: memory does not grow with
    the rows), elsewhere parsed whole and stored with `bulk_create`; both store the same rows.
    `progress(fraction, message)`, when given, is told how far it has come. Raises `InputError`
    listing every problem; nothing is written then. The history records the upload (how many
    items, the file's name) with `user`.
    """
    study_writable(study)
    if study.status != Study.Status.DRAFT:
        raise InputError([Problem(filename, None, None,
                                  "items can only be added while the study is a draft")])
    limit = settings.CONCORD_MAX_UPLOAD_BYTES if max_bytes is None else max_bytes
    questions = {q.key: tuple(q.domain) for q in study.questions.all()}
    comparative = frozenset(study.questions.exclude(kind=Question.Kind.SCALE)
                            .values_list("key", flat=True))
    if _loads_with_copy():
        with transaction.atomic():
            count = items_import_copy(study=study, data=data, filename=filename, max_bytes=limit,
                                      questions=questions, progress=progress,
                                      comparative=comparative)
            outputs_roles_sync(study)
            _items_event(study=study, user=user, count=count, files=[filename])
            return count
    existing = set(study.items.values_list("external_id", flat=True))
    rows = items_parse(data, filename=filename, display=study.display, existing_ids=existing,
                       max_bytes=limit, questions=questions, comparative=comparative,
                       existing_comparisons=frozenset(
                           study.items.exclude(outputs=[]).values_list("external_id",
                                                                       flat=True)))
    if study.display == Study.Display.PAIR:
        problems = sentiment_problems(rows, filename=filename)
        if problems:
            raise InputError(problems)
        pair_rows_score(rows)  # similarity metrics and sentiment (docs/metrics.md)
    if progress:
        progress(0.5, f"storing {len(rows)} items")
    with transaction.atomic():
        start = study.items.count()
        Item.objects.bulk_create(
            Item(
                study=study,
                external_id=row.external_id,
                position=start + n,
                text=row.text,
                text_a=row.text_a,
                text_b=row.text_b,
                is_control=row.is_control,
                system=row.system,
                source=row.source,
                metrics=row.metrics,
                features=row.features,
                role=row.role,
                gold=row.gold,
                tolerance=row.tolerance,
                check_at=row.check_at,
                outputs=row.outputs,
                meta={**row.meta, "design": "file"} if row.outputs else row.meta,
            )
            for n, row in enumerate(rows)
        )
        outputs_roles_sync(study)
        _items_event(study=study, user=user, count=len(rows), files=[filename])
    return len(rows)


def _items_event(*, study: Study, user: User | None, count: int, files: list[str]) -> None:
    """Record an item upload in the history: how many items, from which file(s) (the name
    only, never a server path)."""
    study_event(study=study, user=user, action="items", count=count,
                files=[PurePath(name).name[:200] for name in files])


def _loads_with_copy() -> bool:
    return connections[router.db_for_write(Item)].vendor == "postgresql"


def coref_items_import(
    *,
    study: Study,
    gold: bytes,
    system: bytes,
    gold_name: str,
    system_name: str,
    fmt: str,
    warnings: Collector | None = None,
    user: User | None = None,
) -> int:
    """Validate a gold and a system coreference file completely, then store one item per document.

    The files are read as leniently as the field's scorers read them; what was passed over (a
    stray token in a coreference column, a line with another column count, an unknown RuCoCo
    key) goes to `warnings`, with file, line and column.

    Both files are read with `core.metrics.formats.read_gold_and_system` (CoNLL-2012 or RuCoCo
    JSON). Each document pair becomes an item with
    - `external_id`: `core.items.coref_item_id` (CoNLL `NAME-PART`, RuCoCo the document's name,
      `<gold file stem>#<position>` when unnamed), unique in the file and new to the study;
    - `text` and `annotation`: `core.items.coref_plain_text` / `coref_annotation`;
    - `metrics`: `core.metrics.coref.coref_metrics` (`LEA_split_*` for RuCoCo);
    - `features`: the six error-type counts of `core.metrics.features.error_features`, without
      their `feature:` prefix (as imported `feature:` columns are stored).

    Raises `InputError` listing every problem of both files; nothing is written then.
    """
    study_writable(study)
    if study.status != Study.Status.DRAFT:
        raise InputError([Problem(gold_name, None, None,
                                  "items can only be added while the study is a draft")])
    problems = Collector(gold_name)
    if study.display != Study.Display.COREF:
        problems.add(f"coreference items need a study that shows coreference passages; "
                     f"{study.slug!r} shows {study.display!r} items")
    if fmt not in FORMATS:
        problems.add(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}",
                     column="--format")
    texts = []
    for data, name in ((gold, gold_name), (system, system_name)):
        own = Collector(name)
        texts.append(decode(data, own, max_bytes=settings.CONCORD_MAX_UPLOAD_BYTES))
        problems.extend(own)
    problems.raise_if_any()
    gold_text, system_text = texts
    if gold_text is None or system_text is None:  # decode said why, raise_if_any raised it
        raise InputError([Problem(gold_name, None, None, "the files could not be read")])
    pairs = read_gold_and_system(gold_text, system_text, format=cast(Format, fmt),
                                 gold_file=gold_name, system_file=system_name, warnings=warnings)

    tokens = conll_tokens(gold_text) if fmt == "conll2012" else {}
    stem = PurePath(gold_name).stem
    existing = set(study.items.values_list("external_id", flat=True))
    seen: set[str] = set()
    items: list[Item] = []
    for n, (g, s) in enumerate(pairs, start=1):
        item_id = coref_item_id(g, s, position=n, stem=stem)
        if not item_id.strip():
            problems.add(f"document {n} has an empty name")
        elif (problem := item_id_problem(item_id)) is not None:
            problems.add(f"document {n}: {problem}")
        elif item_id in seen:
            problems.add(f"document {n}: the name {item_id!r} is used twice")
        elif item_id in existing:
            problems.add(f"document {n}: {item_id!r} is already an item of this study")
        seen.add(item_id)
        annotation = coref_annotation(g, s, tokens=tokens.get(g.name))
        items.append(Item(
            study=study,
            external_id=item_id,
            text=coref_plain_text(annotation),
            annotation=annotation,
            metrics=coref_metrics(g, s),
            features={k.removeprefix("feature:"): v for k, v in error_features(g, s).items()},
        ))
    problems.raise_if_any()
    with transaction.atomic():
        start = study.items.count()
        for n, item in enumerate(items):
            item.position = start + n
        Item.objects.bulk_create(items)
        _items_event(study=study, user=user, count=len(items), files=[gold_name, system_name])
    return len(items)


def _item_changeable(item: Item, what: str) -> None:
    study = item.study
    study_writable(study)
    if study.status != Study.Status.DRAFT:
        raise InputError([Problem(item.external_id, None, None,
                                  f"items can only be {what} while the study is a draft")])
    if item.responses.exists():
        raise InputError([Problem(item.external_id, None, None,
                                  f"this item has answers (imported responses), so it cannot be "
                                  f"{what}")])


@transaction.atomic
def item_update(*, item: Item, user: User | None = None, text: str | None = None,
                text_a: str | None = None, text_b: str | None = None,
                is_control: bool | None = None) -> list[str]:
    """Change an item of a draft study (its texts, its control flag); return the changed fields.

    An annotated coreference item's text comes from its documents and is not edited here
    (delete it and upload the documents again); a plain passage is. An edited sentence pair gets its similarity metrics and its
    VADER sentiment computed again (imported sentiment is kept). Recorded in the history with
    the item's id and the names of the fields changed, never the texts.
    """
    _item_changeable(item, "edited")
    study = item.study
    wanted: dict[str, Any] = {"is_control": is_control}
    if study.display == Study.Display.PAIR:
        wanted |= {"text_a": text_a, "text_b": text_b}
    elif study.display == Study.Display.TEXT or not item.annotation:
        wanted |= {"text": text}
    changed = [name for name, value in wanted.items()
               if value is not None and value != getattr(item, name)]
    for name in changed:
        setattr(item, name, wanted[name])
    for name in ("text", "text_a", "text_b"):
        if name in changed and not getattr(item, name).strip():
            raise InputError([Problem(item.external_id, None, name, "the text cannot be empty")])
    if not changed:
        return []
    if study.display == Study.Display.PAIR and {"text_a", "text_b"} & set(changed):
        meta = {k: v for k, v in item.meta.items()
                if item.meta.get("sentiment_source") == "imported"
                or k not in ("sentiment_a", "sentiment_b", "sentiment_source")}
        row = ItemRow(line=0, external_id=item.external_id, text_a=item.text_a,
                      text_b=item.text_b, metrics={k: v for k, v in item.metrics.items()
                                                   if k not in SIMILARITY_METRICS}, meta=meta)
        pair_rows_score([row])
        item.metrics, item.meta = row.metrics, row.meta
        changed += ["metrics"]
    item.save(update_fields=[*changed, *(["meta"] if "metrics" in changed else [])])
    study_event(study=study, user=user, action="item_edit", item=item.external_id,
                fields=sorted(set(changed)))
    return changed


@transaction.atomic
def item_delete(*, item: Item, user: User | None = None) -> None:
    """Delete an item of a draft study that has no answers and that no comparison compares;
    recorded with its id."""
    _item_changeable(item, "deleted")
    comparisons = Item.objects.filter(study_id=item.study_id).exclude(outputs=[])
    if connection.vendor == "postgresql":  # jsonb containment, by index scan of the study
        using = list(comparisons.filter(outputs__contains=[item.external_id])
                     .values_list("external_id", flat=True)[:3])
    else:  # SQLite has no JSON containment: read the comparisons' outputs
        using = [external for external, outputs
                 in comparisons.values_list("external_id", "outputs")
                 if item.external_id in outputs][:3]
    if using:
        raise InputError([Problem(item.external_id, None, None,
                                  f"this item is an output of the comparison "
                                  f"{', '.join(using)}: delete or rebuild the comparisons first")])
    if item.outputs:  # its outputs may now be compared nowhere: their role follows
        study_event(study=item.study, user=user, action="item_delete", item=item.external_id)
        item.delete()
        outputs_roles_sync(item.study)
        return
    study_event(study=item.study, user=user, action="item_delete", item=item.external_id)
    item.delete()
