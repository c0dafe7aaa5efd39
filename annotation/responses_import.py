"""Responses collected elsewhere (Google Forms, crowd platforms, CSV), imported whole or not at
all: parsed and checked by `core.responses`, stored through `annotation.store` (in memory) or
`annotation.bulk` (a long file streamed with COPY on PostgreSQL). Re-exported by
`annotation.services`, where callers find it.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import PurePath
from typing import BinaryIO

from django.conf import settings
from django.db import connections, router, transaction

from core.problems import Collector
from core.responses import (
    Annotator,
    ImportSummary,
    Upload,
    responses_parse,
    responses_summarize,
)
from core.tabular import size_over_limit
from studies.models import Participant, Study

from .bulk import Progress, responses_import_copy
from .models import Response
from .store import AnnotatorRow, ResponseRow, responses_store


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
            items=study.items.values_list("external_id", flat=True),
            questions={q.key: q.values for q in study.question_list},
            existing_annotators=Participant.objects.filter(
                study=study, source=Participant.Source.IMPORT).values_list("external_id", flat=True),
            annotator_column=annotator_column, item_map=item_map, value_map=value_map,
            meta_columns=meta_columns, ignore_columns=ignore_columns, max_bytes=limit,
            warnings=notes,
        )

    limit = settings.CONCORD_MAX_UPLOAD_BYTES if max_bytes is None else max_bytes
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
    return fmt == "long" and connections[router.db_for_write(Response)].vendor == "postgresql"


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
