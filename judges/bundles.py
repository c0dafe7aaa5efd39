"""The judges in a methods bundle: written by the bundle export (`exports`), replayed by
`imports.bundles.bundle_import` through its registry (`judges.apps`), since `imports` may not
import this app. A bundle without judges has neither member and replays as before."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User

from core.problems import InputError, Problem
from studies.models import Study

from .services import judge_answers_import, judge_create

JUDGES_MEMBER = "judges.json"   # every judge's metadata and its runs' labels
ANSWERS_MEMBER = "judges.csv"   # every answer (the judges export)
MEMBERS = (JUDGES_MEMBER, ANSWERS_MEMBER)
MAX_JUDGES = 1000


def judges_replay(*, study: Study, members: Mapping[str, bytes], name: str,
                  user: User | None) -> dict[str, int]:
    """Create the bundle's judges in the replayed study and import their answers; raise
    `InputError` naming the member at fault (the caller's transaction then writes nothing)."""
    if JUDGES_MEMBER not in members:
        return {}
    where = f"{name}/{JUDGES_MEMBER}"
    judges = _judges(members[JUDGES_MEMBER], where)
    answers = 0
    for info in judges:
        fields = {k: info.get(k) for k in ("model", "prompt", "version", "date", "temperature",
                                           "notes")}
        judge = judge_create(study=study, name=str(info.get("name", "")), user=user,
                             **{k: v for k, v in fields.items() if v is not None})
        runs = info.get("runs") or []
        if runs and ANSWERS_MEMBER in members:
            done = judge_answers_import(
                study=study, judge=judge, data=members[ANSWERS_MEMBER],
                filename=f"{name}/{ANSWERS_MEMBER}", user=user,
                max_bytes=settings.CONCORD_BUNDLE_MAX_UNPACKED_BYTES)
            answers += done.answers
    return {"judges": len(judges), "judge_answers": answers}


def _judges(data: bytes, where: str) -> list[dict[str, Any]]:
    try:
        judges = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise InputError([Problem(where, None, None, "not a JSON list of judges")]) from None
    if not isinstance(judges, list) or len(judges) > MAX_JUDGES or not all(
            isinstance(j, dict) and isinstance(j.get("name"), str)
            and isinstance(j.get("runs", []), list) for j in judges):
        raise InputError([Problem(where, None, None, f"not a JSON list of at most {MAX_JUDGES} "
                                                     "judges, each with a name and runs")])
    return judges
