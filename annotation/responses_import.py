"""Responses collected elsewhere (Google Forms, crowd platforms, CSV), imported whole or not at
all: parsed and checked by `core.responses`, stored through `annotation.store` (in memory) or
`annotation.bulk` (a long file streamed with COPY on PostgreSQL). Re-exported by
`annotation.services`, where callers find it.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import PurePath
from typing import BinaryIO

from django.conf import settings
from django.db import connections, router, transaction
from django.db.models import Max

from core.problems import Collector
from core.responses import (
    Annotator,
    AnnotatorSummary,
    ImportSummary,
    Upload,
    responses_parse,
    responses_summarize,
)
from core.responses.comparisons import ComparativeQuestion, JudgmentFile, judgments_parse
from core.tabular import size_over_limit
from studies.models import Item, Participant, Study

from .bulk import Progress, judgments_store, responses_import_copy
from .models import Response
from .store import BATCH, AnnotatorRow, ResponseRow, responses_store


def responses_import(
    *,
    study: Study,
    data: bytes | BinaryIO,
    filename: str,
    fmt: str,
    annotator_column: str | None = None,
    item_map: Upload | Mapping[str, str] | None = None,
    value_map: Upload | Mapping[str, str] | None = None,
    meta_columns: Sequence[str] = (),
    ignore_columns: Sequence[str] = (),
    dry_run: bool = False,
    max_bytes: int | None = None,
    progress: Progress | None = None,
) -> ImportSummary:
    """Validate a response file completely, then store it in one transaction (unless `dry_run`).

    `progress(fraction, message)`, when given, is told how far the import has come (a
    background import shows it, `imports.services`).

    `max_bytes` is the size limit (the browser's upload limit by default; the command line has
    its own, `CONCORD_CLI_MAX_BYTES`). ``data`` is the file's bytes or the file itself, opened
    in binary and seekable: a long file on PostgreSQL is then read a chunk at a time (memory
    independent of its size). On PostgreSQL a long file is loaded with COPY, streaming
    (`annotation.bulk`); elsewhere, and for the wide format, it is parsed in memory and stored
    with `bulk_create`. Both store the same rows.

    Allowed whatever the study's status. Each annotator becomes a participant with
    source "import" and external_id = the annotator id; an annotator already imported into the
    study is an error naming them (re-importing never doubles nor silently overwrites answers).
    Responses are stored annotator by annotator in order of first appearance, so the pseudonyms
    A1, A2, … follow the file. Raises `InputError` listing every problem; nothing is written then.
    `ignore_columns` (wide) are read by nothing: the on-screen column mapper
    (`imports.columns`) passes the columns the researcher chose to ignore.
    """
    notes: list[str] = []

    def parse() -> list[Annotator]:
        notes.clear()
        assert isinstance(data, bytes)  # read whole above: the in-memory path parses bytes
        return responses_parse(
            data, filename=filename, fmt=fmt,
            items=study.items.filter(outputs=[]).values_list("external_id", flat=True),
            questions={q.key: q.values for q in study.question_list if not q.is_comparative},
            existing_annotators=Participant.objects.filter(
                study=study, source=Participant.Source.IMPORT).values_list("external_id", flat=True),
            annotator_column=annotator_column, item_map=item_map, value_map=value_map,
            meta_columns=meta_columns, ignore_columns=ignore_columns, max_bytes=limit,
            warnings=notes,
        )

    limit = settings.CONCORD_MAX_UPLOAD_BYTES if max_bytes is None else max_bytes
    if fmt == "judgments":
        return judgments_import(study=study, data=data, filename=filename, max_bytes=limit,
                                dry_run=dry_run, progress=progress)
    if not any(not q.is_comparative for q in study.question_list):
        errors = Collector(filename)
        errors.add("this study asks only comparative questions: import their judgments as a "
                   "judgments file (annotator,items,choice)")
        errors.raise_if_any()
    if not isinstance(data, bytes) and not _loads_with_copy(fmt):
        data = _read_within(data, limit, filename)  # parsed in memory: read it whole
    if _loads_with_copy(fmt):
        return responses_import_copy(
            study=study, data=data, filename=filename, annotator_column=annotator_column,
            item_map=item_map, value_map=value_map, meta_columns=meta_columns,
            max_bytes=limit, dry_run=dry_run, progress=progress)
    if progress:
        progress(0.0, "reading the file")
    if dry_run:
        return replace(responses_summarize(parse(), filename=filename, fmt=fmt),
                       warnings=tuple(notes))
    with transaction.atomic():
        # Serialise imports into one study, so two uploads of one annotator cannot both pass.
        Study.objects.select_for_update().filter(pk=study.pk).values_list("pk").get()
        annotators = parse()
        if progress:
            progress(0.5, f"storing the answers of {len(annotators)} annotators")
        _responses_store(study=study, annotators=annotators, filename=filename)
    return replace(responses_summarize(annotators, filename=filename, fmt=fmt), imported=True,
                   warnings=tuple(notes))


def _read_within(file: BinaryIO, limit: int, filename: str) -> bytes:
    """Read a seekable file whole, refusing it unread when it is over ``limit`` bytes."""
    size = file.seek(0, io.SEEK_END)
    file.seek(0)
    if size > limit:
        errors = Collector(filename)
        errors.add(size_over_limit(size, limit=limit))
        errors.raise_if_any()
    return file.read()


def _loads_with_copy(fmt: str) -> bool:
    """Load with COPY on PostgreSQL; a wide file (one row per annotator) is small."""
    return fmt == "long" and _postgresql()


def _postgresql() -> bool:
    return connections[router.db_for_write(Response)].vendor == "postgresql"


def _responses_store(*, study: Study, annotators: Sequence[Annotator], filename: str) -> None:
    """Store the parsed annotators through `store.responses_store`: each becomes a participant,
    their answered presentations responses in the file's order, so response ids and the
    pseudonyms (given to the annotators with an answer) follow it."""
    item_ids = dict(study.items.values_list("external_id", "id"))
    rows = [ResponseRow(annotator=n, item_id=item_ids[x.item], presentation=x.presentation,
                        position=x.position, cells=x.cells, active_ms=x.active_ms)
            for n, a in enumerate(annotators)
            for x in sorted(a.answers.values(), key=lambda x: (x.presentation, x.position or 0))
            if x.stored]
    responses_store(
        study=study, responses=rows, label=f"imported from {PurePath(filename).name}",
        annotators=[AnnotatorRow(external_id=a.external_id, meta=a.meta,
                                 presented=len(a.answers)) for a in annotators])


# --- comparative judgments -------------------------------------------------------------------


def judgments_import(*, study: Study, data: bytes | BinaryIO, filename: str, max_bytes: int,
                     dry_run: bool = False, progress: Progress | None = None) -> ImportSummary:
    """Validate a long file of comparative judgments completely, then store it in one
    transaction (unless `dry_run`): `core.responses.comparisons` reads it, the comparisons it
    judges that the study lacks are created (`comparisons_add`), and each annotator becomes an
    imported participant whose answers to each comparison are one response, stored by
    `store.responses_store` (the judgment in `Answer.choice`, its canonical value in
    `Answer.value`). Raises `InputError` listing every problem; nothing is written then.

    The file is read a chunk at a time when it is a file; the judgments are held in memory
    (a few hundred bytes each) until they are stored in batches.
    """
    notes: list[str] = []

    def parse() -> JudgmentFile:
        notes.clear()
        if not isinstance(data, bytes):
            data.seek(0)
        items = list(study.items.order_by("position").values_list("external_id", "outputs"))
        comparisons: dict[frozenset[str], list[str]] = {}
        for _, outputs in items:
            if outputs:
                comparisons.setdefault(frozenset(outputs), list(outputs))
        return judgments_parse(
            data, filename=filename, outputs=[external for external, outputs in items
                                              if not outputs],
            questions={q.key: ComparativeQuestion(q.kind, q.comparison)
                       for q in study.question_list if q.is_comparative},
            comparisons=comparisons,
            existing_annotators=Participant.objects.filter(
                study=study, source=Participant.Source.IMPORT).values_list("external_id",
                                                                          flat=True),
            max_bytes=max_bytes, warnings=notes)

    if progress:
        progress(0.0, "reading the file")
    if dry_run:
        return _judgments_summary(parse(), filename=filename, notes=notes, imported=False)
    with transaction.atomic():
        Study.objects.select_for_update().filter(pk=study.pk).values_list("pk").get()
        read = parse()
        if progress:
            progress(0.5, f"storing the judgments of {len(read.annotators)} annotators")
        comparisons_add(study=study, outputs=read.new)
        item_ids = {frozenset(outputs): pk for pk, outputs in
                    study.items.exclude(outputs=[]).order_by("-position")
                    .values_list("pk", "outputs")}  # the first comparison of a set wins
        label = f"imported from {PurePath(filename).name}"
        if _postgresql():  # set-based INSERTs, no ORM object per judgment
            judgments_store(study=study, label=label,
                            annotators=[a.external_id for a in read.annotators],
                            rows=[(n, item_ids[outputs], judged.cells)
                                  for n, annotator in enumerate(read.annotators)
                                  for outputs, judged in annotator.judged.items()])
        else:
            responses_store(
                study=study, label=label,
                annotators=[AnnotatorRow(external_id=a.external_id) for a in read.annotators],
                responses=[ResponseRow(annotator=n, item_id=item_ids[outputs], presentation=1,
                                       position=None, cells=judged.cells)
                           for n, annotator in enumerate(read.annotators)
                           for outputs, judged in annotator.judged.items()])
    return _judgments_summary(read, filename=filename, notes=notes, imported=True)


def comparisons_add(*, study: Study, outputs: Sequence[Sequence[str]]) -> list[Item]:
    """Create a comparison of each list of ``outputs`` (item ids of the study, in canonical
    order), as an import makes them: role main, the outputs' common source, ``meta`` design
    "import", ids ``cmp-<source>-<n>`` (``cmp-<n>`` without a common source) made unique
    against the study's. A study without a scale question shows its outputs only inside
    comparisons: those still main become outputs (`Item.Role.OUTPUT`)."""
    if not outputs:
        return []
    sources = dict(study.items.values_list("external_id", "source"))
    taken = set(sources)
    position = (study.items.aggregate(last=Max("position"))["last"] or 0) + 1
    counters: dict[str, int] = {}
    created = []
    for listed in outputs:
        common = {sources[name] for name in listed}
        source = common.pop() if len(common) == 1 else ""
        stem = f"cmp-{source}-" if source else "cmp-"
        while True:
            counters[stem] = counters.get(stem, 0) + 1
            external = f"{stem}{counters[stem]}"
            if external not in taken and len(external) <= 200:
                break
            if len(external) > 200:  # a very long source: the plain numbering
                stem = "cmp-"
        taken.add(external)
        created.append(Item(study=study, external_id=external, position=position,
                            source=source, outputs=list(listed), meta={"design": "import"}))
        position += 1
    if _postgresql():  # thousands of comparisons: COPY, not an ORM object each
        _items_copy(created)
    else:
        Item.objects.bulk_create(created, batch_size=BATCH)
    if not any(not q.is_comparative for q in study.question_list):
        named = {name for listed in outputs for name in listed}
        study.items.filter(external_id__in=named, role=Item.Role.MAIN).update(
            role=Item.Role.OUTPUT)
    return created


def _items_copy(items: Sequence[Item]) -> None:
    """Insert new comparisons with COPY (PostgreSQL): 9 000 took 4 to 7 s by `bulk_create`."""
    with connections[router.db_for_write(Item)].cursor() as cursor, cursor.cursor.copy(
            f"COPY {Item._meta.db_table} (study_id, external_id, position, text, text_a, "
            "text_b, is_control, system, source, metrics, features, meta, annotation, role, "
            "gold, tolerance, check_at, outputs) FROM STDIN") as copy:
        for item in items:
            copy.write_row((item.study_id, item.external_id, item.position, "", "", "", False,
                            "", item.source, "{}", "{}", json.dumps(item.meta), "{}",
                            item.role, "{}", "{}", None, json.dumps(item.outputs)))


def _judgments_summary(read: JudgmentFile, *, filename: str, notes: Sequence[str],
                       imported: bool) -> ImportSummary:
    per = [AnnotatorSummary(
        external_id=a.external_id, rows=a.rows, presented=len(a.judged),
        answered=len(a.judged), blanks=0, duplicates=0, meta={}) for a in read.annotators]
    return ImportSummary(
        filename=filename, fmt="judgments", rows=sum(a.rows for a in read.annotators),
        annotators=tuple(per),
        items=len({outputs for a in read.annotators for outputs in a.judged}),
        answers=sum(p.answered for p in per), blanks=0, duplicates=0, merged_rows=0,
        imported=imported, warnings=tuple(notes))
