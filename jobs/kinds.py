"""The kinds of job and how each one's task is sent.

Each app registers its kind from its `ready()` (`job_kind_register(AnalysisRun,
"analysis.tasks.run_analysis")`), so `jobs` knows no concrete job, and a service enqueues its
job through `jobs.services.job_enqueue` without importing its own `tasks.py`. The task is
named by its dotted path and looked up when a job is sent, not when it is registered: nothing
imports a task module before a job is sent, and a test can replace the task.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module

from .models import Job

# model -> send(job_id, delivery): publish the kind's task for this job
JOB_KINDS: dict[type[Job], Callable[[int, int], object]] = {}


def job_kind_register(model: type[Job], task: str) -> None:
    """Register the task that runs the jobs of ``model``, by its dotted path."""
    module, name = task.rsplit(".", 1)

    def send(job_id: int, delivery: int) -> None:
        getattr(import_module(module), name).apply_async(args=[job_id],
                                                         kwargs={"delivery": delivery})

    JOB_KINDS[model] = send


def job_kind_send(model: type[Job], job_id: int, delivery: int) -> object:
    """Publish the task of a job of ``model`` (its ``delivery``-th message)."""
    return JOB_KINDS[model](job_id, delivery)
