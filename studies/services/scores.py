"""System-level metric scores of a study: imported from a `system,metric,value` file
(`core.system_scores`; docs/systems.md), read by the systems analysis' meta-evaluation."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction

from core.problems import Collector, InputError, Problem
from core.system_scores import system_scores_parse

from ..models import Study, SystemScore
from .lifecycle import study_event, study_writable


@dataclass(frozen=True)
class SystemScoresImported:
    """What an import stored: its rows, the metrics it replaced, and the rows it skipped."""

    rows: int
    metrics: list[str]
    replaced: int
    warnings: Collector = field(compare=False)


def system_scores_import(*, study: Study, data: bytes, filename: str,
                         user: User | None = None,
                         max_bytes: int | None = None) -> SystemScoresImported:
    """Validate a system scores file completely, then replace the study's scores of the metrics
    it names with its rows, in one transaction.

    The scores of a metric the file does not name stay. A row of a system that no item of the
    study names is skipped with a warning (in the result); every other problem is raised as
    `InputError` with its line and column, and nothing changes then. The scores are no part of
    what annotators see, so they may change whatever the study's status, unless it is archived.
    Recorded in the history with the metrics and the number of rows.
    """
    study_writable(study)
    limit = settings.CONCORD_MAX_UPLOAD_BYTES if max_bytes is None else max_bytes
    systems = set(study.items.exclude(system="").values_list("system", flat=True).distinct())
    if not systems:
        raise InputError([Problem(filename, None, None,
                                  "no item of this study names a system: import items with a "
                                  "'system' column first")])
    parsed = system_scores_parse(data, filename=filename, systems=systems, max_bytes=limit)
    metrics = parsed.metrics
    with transaction.atomic():
        Study.objects.select_for_update().filter(pk=study.pk).exists()  # one import at a time
        replaced, _ = SystemScore.objects.filter(study=study, metric__in=metrics).delete()
        SystemScore.objects.bulk_create(
            SystemScore(study=study, system=row.system, metric=row.metric, value=row.value)
            for row in parsed.rows)
        study_event(study=study, user=user, action="system_scores", metrics=metrics[:50],
                    rows=len(parsed.rows), skipped=parsed.warnings.count)
    return SystemScoresImported(rows=len(parsed.rows), metrics=metrics, replaced=replaced,
                                warnings=parsed.warnings)


@transaction.atomic
def system_scores_delete(*, study: Study, metric: str, user: User | None = None) -> int:
    """Delete the study's system-level scores of one metric; return how many there were."""
    study_writable(study)
    deleted, _ = SystemScore.objects.filter(study=study, metric=metric).delete()
    if not deleted:
        raise InputError([Problem(study.slug, None, "metric",
                                  f"no system-level score of the metric {metric[:80]!r}")])
    study_event(study=study, user=user, action="system_scores_delete", metric=metric[:200],
                rows=deleted)
    return deleted
