"""The results dashboard: server-rendered from the stored results document, plus run control.

Every page here reads the study, its runs and the latest results document: a fixed number of
queries whatever the study's size (pinned in tests/analysis/test_dashboard.py).
"""

from __future__ import annotations

import json
from datetime import timedelta

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count, Q
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from studies.selectors import study_get

from . import dashboard as tables
from .charts import build_charts, chart_data
from .export_formats import csv_chunks
from .models import AnalysisRun
from .results import DEFAULTS
from .services import analysis_run_create

RECENT_RUNS = 5


class RunForm(forms.Form):
    level = forms.ChoiceField(
        label="Level of measurement", choices=[(x, x) for x in tables.LEVELS],
        help_text="Used for trust coefficients and the outliers removed from alpha; the alpha "
                  "table always shows all four levels.")
    trust_variant = forms.ChoiceField(
        label="Trust variant", choices=[("paper", "paper (seed 000, Algorithm 1)"),
                                        ("notebook", "notebook (the authors' code)")])
    simple_threshold = forms.IntegerField(
        label="Simple items: at most this many distinct answers", min_value=1, max_value=1000)


def _stalled(run: AnalysisRun) -> bool:
    """A queued run no worker has picked up within CONCORD_WORKER_WAIT_SECONDS."""
    wait = timedelta(seconds=settings.CONCORD_WORKER_WAIT_SECONDS)
    return run.status == AnalysisRun.Status.QUEUED and timezone.now() - run.created_at > wait


def _stalled_message() -> str:
    return (f"No worker has picked this run up in {settings.CONCORD_WORKER_WAIT_SECONDS} s. "
            "Is a Celery worker running? Start one with `celery -A config worker` "
            "(`make run` starts one); the run will start as soon as a worker answers.")


def _run_state(run: AnalysisRun) -> dict:
    stalled = _stalled(run)
    return {
        "id": run.pk,
        "status": run.status,
        "progress": run.progress,
        "message": run.message,
        "error": run.error,
        "stalled": stalled,
        "stalled_message": _stalled_message() if stalled else "",
        "attempts": run.attempts,
    }


def _scale_param(request: HttpRequest, document: dict | None) -> str:
    names = tables.scale_names(document or {})
    scale = request.GET.get("scale", "raw")
    return scale if scale in names else (names[0] if names else "raw")


def _load(request: HttpRequest, slug: str):
    """The study (owner-scoped), its recent runs, and the latest finished run with its results."""
    study = study_get(user=request.user, slug=slug)
    runs = list(AnalysisRun.objects.filter(study=study).defer("results")
                .order_by("-created_at", "-id")[:RECENT_RUNS])
    finished = (AnalysisRun.objects.filter(study=study, status=AnalysisRun.Status.DONE)
                .order_by("-finished_at", "-id").first())
    return study, runs, finished


@login_required
@require_GET
def dashboard(request: HttpRequest, slug: str) -> HttpResponse:
    study, runs, finished = _load(request, slug)
    document = finished.results if finished else None
    people = study.participants.aggregate(
        total=Count("id"), complete=Count("id", filter=Q(completed_at__isnull=False)),
        started=Count("id", filter=Q(n_answered__gt=0)))
    active = next((r for r in runs if r.status in (AnalysisRun.Status.QUEUED,
                                                   AnalysisRun.Status.RUNNING)), None)
    base_settings = {**DEFAULTS, **(finished.settings if finished else study.analysis_settings)}
    form = RunForm(initial={k: base_settings[k] for k in ("level", "trust_variant",
                                                          "simple_threshold")})
    context = {"study": study, "runs": runs, "finished": finished, "active": active,
               "active_state": _run_state(active) if active else None, "form": form,
               "people": people, "document": document}
    if document is not None:
        scale = _scale_param(request, document)
        pooled, timing = tables.timing_rows(document)
        rules, flags = tables.flag_rows(document)
        features, weights = tables.weight_table(document, scale=scale)
        charts = build_charts(document, scale=scale, level=document["settings"].get("level"))
        context.update({
            "scale": scale,
            "scales": tables.scale_names(document),
            "levels": tables.LEVELS,
            "alpha_tables": tables.alpha_tables(document),
            "trust": tables.trust_table(document, scale=scale, items="all"),
            "trust_simple": tables.trust_table(document, scale=scale, items="simple"),
            "duplicates": tables.duplicates_rows(document, scale=scale),
            "timing_pooled": pooled,
            "timing": timing,
            "rules": rules,
            "rule_labels": [tables.RULE_LABELS.get(r, r) for r in rules],
            "flags": flags,
            "correlations": tables.correlation_table(document),
            "gaps": tables.gap_rows(document, scale=scale),
            "largest_gaps": tables.largest_gaps(document, scale=scale),
            "weight_features": features,
            "weights": weights,
            "noise": tables.noise_rows(document),
            "charts": {},
            "settings_used": document["settings"],
        })
        for chart in charts:
            # the correlation chart belongs with its table, in a section of its own on the page
            section = "correlations" if chart.name == "correlations" else chart.section
            context["charts"].setdefault(section, []).append(chart)
    return render(request, "analysis/dashboard.html", context)


@login_required
@require_POST
def run_start(request: HttpRequest, slug: str) -> HttpResponse:
    study = study_get(user=request.user, slug=slug)
    form = RunForm(request.POST)
    if not form.is_valid():
        problems = "; ".join(f"{form.fields[name].label}: {' '.join(errs)}"
                             for name, errs in form.errors.items())
        messages.error(request, f"The run was not started. {problems}")
        return redirect("analysis:dashboard", slug=slug)
    run = analysis_run_create(study=study, user=request.user, overrides=form.cleaned_data)
    messages.success(request, f"Analysis run {run.pk} queued.")
    return redirect(reverse("analysis:dashboard", kwargs={"slug": slug}) + "#run")


@login_required
@require_GET
def run_status(request: HttpRequest, slug: str, run_id: int) -> JsonResponse:
    study = study_get(user=request.user, slug=slug)
    run = (AnalysisRun.objects.filter(study=study, pk=run_id).defer("results", "settings")
           .first())
    if run is None:
        raise Http404("No such run")
    return JsonResponse(_run_state(run))


def _chart(request: HttpRequest, slug: str, name: str):
    study = study_get(user=request.user, slug=slug)
    finished = (AnalysisRun.objects.filter(study=study, status=AnalysisRun.Status.DONE)
                .order_by("-finished_at", "-id").only("results").first())
    if finished is None:
        raise Http404("No finished analysis yet")
    document = finished.results
    charts = build_charts(document, scale=_scale_param(request, document),
                          level=document["settings"].get("level"))
    chart = next((c for c in charts if c.name == name), None)
    if chart is None:
        raise Http404("No such chart")
    return study, chart


def _attachment(response: HttpResponse, filename: str) -> HttpResponse:
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@login_required
@require_GET
def chart_spec(request: HttpRequest, slug: str, name: str) -> HttpResponse:
    study, chart = _chart(request, slug, name)
    body = json.dumps(chart.spec, indent=1, ensure_ascii=False)
    return _attachment(HttpResponse(body, content_type="application/json"),
                       f"{study.slug}-{chart.name}.vl.json")


@login_required
@require_GET
def chart_values(request: HttpRequest, slug: str, name: str, fmt: str) -> HttpResponse:
    if fmt not in ("csv", "json"):
        raise Http404("Chart data comes as .csv or .json")
    study, chart = _chart(request, slug, name)
    rows = chart_data(chart)
    if fmt == "json":
        body = json.dumps(rows, indent=1, ensure_ascii=False)
        return _attachment(HttpResponse(body, content_type="application/json"),
                           f"{study.slug}-{chart.name}.json")
    columns: list[str] = []
    for row in rows:
        columns += [k for k in row if k not in columns]
    body = b"".join(csv_chunks(columns, ([row.get(c) for c in columns] for row in rows)))
    return _attachment(HttpResponse(body, content_type="text/csv; charset=utf-8"),
                       f"{study.slug}-{chart.name}.csv")

