"""Live quality while a study collects: the flags knowable before any analysis run.

Celery beat sends `analysis.tasks.live_quality` every CONCORD_LIVE_QUALITY_SECONDS; it calls
`live_quality_refresh`, which, for every open study, reads the answers in one streamed query
(participant by participant), computes per participant

- **too fast**: the share of their answered presentations whose active time (the first
  revision's) is below the study's fixed floor, ``quality.too_fast.floor_s``, flagged above
  ``quality.too_fast.threshold`` (`core.stats.quality.too_fast_annotators`; the reading-speed floor
  needs every item's text, so it waits for the run);
- **straight-lining**: the longest run of one answer across items and across an item's questions
  (positions on each question's scale), flagged as `core.stats.quality.straight_lining_annotators`
  does with ``quality.straight_lining``,

and upserts one `LiveQuality` row per participant (set-based: one statement per batch, no ORM
object per row).  Memory is bounded by ``BATCH_ROWS`` answers (plus one participant's), whatever
the study's size.  Nothing here runs inside an annotator's request.  Sources:
docs/statistics/quality.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import numpy as np
from django.db import connections, router, transaction
from django.utils import timezone

from annotation.models import Answer, Response
from core.settings import AnalysisSettings, SettingsError
from core.stats._types import LongRatings
from core.stats.quality import straight_lining_annotators, too_fast_annotators
from studies.models import Participant, Question, Study

from .models import LiveQuality

BATCH_ROWS = 50_000  # answers held at once (a participant is never split)

_ROWS_SQL = """
SELECT first.participant_id, first.id, first.active_ms, answer.question_id, answer.value
FROM {response} first
JOIN {participant} p ON p.id = first.participant_id
JOIN {response} current ON current.participant_id = first.participant_id
     AND current.item_id = first.item_id AND current.presentation = first.presentation
     AND current.is_current
JOIN {answer} answer ON answer.response_id = current.id
JOIN {question} question ON question.id = answer.question_id
WHERE p.study_id = %s AND first.revision = 1
ORDER BY first.participant_id, first.id, question.position, question.id
"""

_UPSERT_SQL = """
INSERT INTO {table} (participant_id, computed_at, floor_s, n_timed, n_fast, fast_share, too_fast,
                     longest_run, n_answers, straight_lining)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (participant_id) DO UPDATE SET
    computed_at = excluded.computed_at, floor_s = excluded.floor_s, n_timed = excluded.n_timed,
    n_fast = excluded.n_fast, fast_share = excluded.fast_share, too_fast = excluded.too_fast,
    longest_run = excluded.longest_run, n_answers = excluded.n_answers,
    straight_lining = excluded.straight_lining
"""


def live_quality_refresh() -> dict[str, int]:
    """Refresh the live flags of every open study; return how many studies and participants."""
    studies = list(Study.objects.filter(status=Study.Status.OPEN)
                   .values_list("pk", "analysis_settings"))
    done = 0
    for pk, stored in studies:
        done += live_quality_study(study_id=pk, stored_settings=stored)
    return {"studies": len(studies), "participants": done}


def live_quality_study(*, study_id: int, stored_settings: dict[str, Any] | None = None) -> int:
    """Compute and store the live flags of one study's participants; return how many."""
    try:
        settings = AnalysisSettings.from_mapping(stored_settings or {})
    except SettingsError:  # settings an older version stored: the defaults rather than nothing
        settings = AnalysisSettings()
    positions = {pk: {float(v): n for n, v in enumerate(values)} for pk, values in
                 Question.objects.filter(study_id=study_id).values_list("pk", "values")}
    now = timezone.now()
    sql = _ROWS_SQL.format(response=Response._meta.db_table, answer=Answer._meta.db_table,
                           participant=Participant._meta.db_table,
                           question=Question._meta.db_table)
    done = 0
    with connections[router.db_for_read(Response)].cursor() as cursor:
        cursor.execute(sql, [study_id])
        batch: list[tuple] = []
        while rows := cursor.fetchmany(5000):
            for row in rows:
                if len(batch) >= BATCH_ROWS and row[0] != batch[-1][0]:
                    done += _store(_flags(batch, positions, settings), now)
                    batch = []
                batch.append(row)
        if batch:
            done += _store(_flags(batch, positions, settings), now)
    return done


def _flags(rows: Sequence[tuple], positions: dict[int, dict[float, int]],
           settings: AnalysisSettings) -> list[tuple[Any, ...]]:
    """Return one tuple per participant of ``rows`` (ordered by participant, then presentation):
    (participant, floor, timed, fast, share, too fast, run, answers, straight-lining)."""
    participant = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    presentation = np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows))
    active = np.fromiter((np.nan if r[2] is None else r[2] for r in rows), dtype=float,
                         count=len(rows))
    position = np.fromiter((_position(positions, r[3], r[4]) for r in rows), dtype=float,
                           count=len(rows))
    people, who = np.unique(participant, return_inverse=True)
    # Time is per presentation: its first answer row carries it.
    first = np.r_[True, presentation[1:] != presentation[:-1]]
    n_shown = int(first.sum())
    answered = np.zeros(n_shown, dtype=bool)  # any question of the presentation answered
    np.logical_or.at(answered, np.cumsum(first) - 1, ~np.isnan(position))
    fast = settings.quality.params("too_fast")
    fast.pop("reading_speed")  # the live floor is the fixed one (see the module docstring)
    ratings = LongRatings(item=np.arange(n_shown), annotator=who[first],
                          value=np.where(answered, 1.0, np.nan), n_items=n_shown,
                          n_annotators=len(people))
    too_fast = too_fast_annotators(ratings, active[first], **fast)
    bounds = np.flatnonzero(np.r_[True, participant[1:] != participant[:-1], True])
    straight = straight_lining_annotators(
        [position[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)],
        **settings.quality.params("straight_lining"))
    out = []
    for j, pk in enumerate(people):
        f, s = too_fast.records[j], straight.records[j]
        timed = int(f.n)
        out.append((int(pk), float(fast["floor_s"]), timed, int(f.detail["n_fast"]),  # type: ignore[attr-defined]
                    f.value, bool(f.flagged), int(_run(position[bounds[j]:bounds[j + 1]])),
                    int(s.n), bool(s.flagged)))  # type: ignore[attr-defined]
    return out


def _position(positions: dict[int, dict[float, int]], question: int, value: float | None
              ) -> float:
    if value is None:
        return np.nan
    n = positions.get(question, {}).get(float(value))
    return np.nan if n is None else float(n)


def _run(sequence: np.ndarray) -> int:
    from core.stats.quality import longest_run

    return longest_run(sequence)[0]


def _store(rows: Iterable[tuple[Any, ...]], now: datetime) -> int:
    values = [(pk, now, floor, timed, fast, share, flagged, run, n, straight)
              for pk, floor, timed, fast, share, flagged, run, n, straight in rows]
    if values:
        with transaction.atomic(), connections[router.db_for_write(LiveQuality)].cursor() as c:
            c.executemany(_UPSERT_SQL.format(table=LiveQuality._meta.db_table), values)
    return len(values)
