"""The results dashboard: server-rendered from the stored results document, plus run control.

Every page here reads the study, its runs and the latest results document: a fixed number of
queries whatever the study's size (pinned in tests/analysis/test_dashboard.py).
"""

from __future__ import annotations

import json
import re

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from core.formats import csv_chunks
from jobs.selectors import job_status
from studies.decorators import study_view
from studies.models import Membership, Study
from studies.selectors import Role

from . import dashboard as tables
from . import methods
from .annotator import CONSENSUS_SCALE, annotator_page
from .charts import annotator_timing_chart, build_charts, chart_data
from .dashboard_page import dashboard_context, selection
from .forms import RunForm
from .models import AnalysisRun
from .selectors import (
    ANNOTATOR_ROWS,
    annotator_answers,
    dashboard_data,
    item_labels_for,
    latest_run,
)
from .services import analysis_run_create


def _selection(request: HttpRequest, document: dict) -> tuple[str | None, dict, str]:
    """Return the question and scale chosen (``?question=&scale=``) and the document as it
    reads for that question; an unknown choice falls back to the first rather than failing."""
    return selection(document, question=request.GET.get("question"),
                     scale=request.GET.get("scale", "raw"))


@login_required
@require_GET
@study_view(need=Role.VIEWER)
def dashboard(request: HttpRequest, study: Study) -> HttpResponse:
    context = dashboard_context(
        study=study, data=dashboard_data(study=study), question=request.GET.get("question"),
        scale=request.GET.get("scale", "raw"), everyone=request.GET.get("annotators") == "all",
        query=request.GET)
    return render(request, "analysis/dashboard.html", context)


PSEUDONYM = re.compile(r"A([1-9][0-9]{0,8})")


@login_required
@require_GET
@study_view(need=Role.VIEWER)
def annotator(request: HttpRequest, study: Study, pseudonym: str) -> HttpResponse:
    """One annotator against the newest finished run: their answers beside each item's
    aggregated label, their times, duplicates, every rule's value, their ranks.  Reads the run's
    stored document and one bounded query of their answers; computes no statistic."""
    match = PSEUDONYM.fullmatch(pseudonym)
    participant = match and (study.participants.filter(pseudonym_number=int(match[1]))
                             .only("pk", "study_id", "pseudonym_number", "n_answered", "n_assigned")
                             .first())
    if not participant:
        raise Http404("No annotator has this pseudonym")
    finished = latest_run(study=study, kept=True)
    answers = annotator_answers(participant_id=participant.pk)
    question, document, scale = _selection(request, finished.results if finished else {})
    key = document.get("question")
    labels = [r for r in item_labels_for(document=finished.results if finished else {},
                                         items=[a["item"] for a in answers],
                                         scale=CONSENSUS_SCALE)
              if r.get("question") in (key, None)]
    page = annotator_page(document, name=pseudonym, question=question, scale=scale,
                          answers=answers, truncated=len(answers) >= ANNOTATOR_ROWS,
                          labels=labels)
    floor = ((document.get("settings") or {}).get("quality") or {}).get("too_fast") or {}
    chart = annotator_timing_chart(pseudonym, page.seconds, floor_s=floor.get("floor_s"),
                                   pooled_median_s=(page.pooled or {}).get("median_s"))
    excluded = pseudonym in study.analysis.excluded_annotators
    return render(request, "analysis/annotator.html", {
        "study": study, "participant": participant, "name": pseudonym, "page": page,
        "finished": finished, "document": document if finished else None,
        "question": question, "questions": tables.question_choices(document), "scale": scale,
        "scales": tables.scale_names(document), "chart": chart, "excluded": excluded,
        "writable": Membership.allows(study.role, Role.EDITOR) and not study.is_archived,
        "rerun": RunForm.initial_from(study.analysis_settings), "competence_labels":
        list(tables.COMPETENCE_LABELS.values())})


@login_required
@require_POST
@study_view(need=Role.EDITOR)
def run_start(request: HttpRequest, study: Study) -> HttpResponse:
    form = RunForm(request.POST)
    if not form.is_valid():
        problems = "; ".join(f"{form.fields[name].label}: {' '.join(errs)}"
                             for name, errs in form.errors.items())
        messages.error(request, f"The run was not started. {problems}")
        return redirect("analysis:dashboard", slug=study.slug)
    run = analysis_run_create(study=study, user=request.user,
                              settings=form.run_settings(base=study.analysis))
    if run.status == AnalysisRun.Status.FAILED:  # the broker did not answer: say so now
        messages.error(request, f"Analysis run {run.pk} was not started. {run.error}")
        return redirect("analysis:dashboard", slug=study.slug)  # the message opens the page
    messages.success(request, f"Analysis run {run.pk} queued.")
    return redirect(reverse("analysis:dashboard", kwargs={"slug": study.slug}) + "#run")


@login_required
@require_GET
@study_view(need=Role.VIEWER)
def run_status(request: HttpRequest, study: Study, run_id: int) -> JsonResponse:
    run = (AnalysisRun.objects.filter(study=study, pk=run_id).defer("results", "settings")
           .first())
    if run is None:
        raise Http404("No such run")
    return JsonResponse(job_status(job=run))


def _chart(request: HttpRequest, study: Study, name: str):
    finished = latest_run(study=study, kept=True)
    if finished is None:
        raise Http404("No finished analysis yet")
    question, document, scale = _selection(request, finished.results)
    charts = build_charts(document, question=question, scale=scale,
                          level=document["settings"].get("level"))
    chart = next((c for c in charts if c.name == name), None)
    if chart is None:
        raise Http404("No such chart")
    return chart


def _attachment(response: HttpResponse, filename: str) -> HttpResponse:
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@login_required
@require_GET
@study_view(need=Role.VIEWER)
def chart_spec(request: HttpRequest, study: Study, name: str) -> HttpResponse:
    chart = _chart(request, study, name)
    body = json.dumps(chart.spec, indent=1, ensure_ascii=False)
    return _attachment(HttpResponse(body, content_type="application/json"),
                       f"{study.slug}-{chart.name}.vl.json")


@login_required
@require_GET
@study_view(need=Role.VIEWER)
def chart_values(request: HttpRequest, study: Study, name: str, fmt: str) -> HttpResponse:
    if fmt not in ("csv", "json"):
        raise Http404("Chart data comes as .csv or .json")
    chart = _chart(request, study, name)
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



# --- method pages ---------------------------------------------------------------------------

def _doc_link(run: tuple[str, int] | None) -> methods.Link:
    """Return the URL maker of links between method pages: a run's pages link to that run's."""
    def link(page: str, fragment: str) -> str:
        if page == methods.REFERENCES:
            url = reverse("analysis:references")
        elif run is not None:
            url = reverse("analysis:run_method",
                          kwargs={"slug": run[0], "run_id": run[1], "name": page})
        else:
            url = reverse("analysis:method", kwargs={"name": page})
        return url + (f"#{fragment}" if fragment else "")
    return link


def _method_page(request: HttpRequest, name: str, run: tuple[str, int] | None,
                 **context) -> HttpResponse:
    if name not in methods.METHODS:  # the whitelist: no path is built from the request
        raise Http404("No such method page")
    link = _doc_link(run)
    page = methods.render(name, link)
    return render(request, "analysis/method.html", {
        "page": page, "name": name, "references": methods.references_of(page, link),
        "pages": [(n, methods.title_of(n), link(n, "")) for n in methods.METHODS], **context})


@login_required
@require_GET
def method(request: HttpRequest, name: str) -> HttpResponse:
    """How one statistic is computed (docs/statistics/<name>.md), outside any run."""
    return _method_page(request, name, None)


@login_required
@require_GET
@study_view(need=Role.VIEWER)
def run_method(request: HttpRequest, study: Study, run_id: int, name: str) -> HttpResponse:
    """How one statistic is computed, with the settings a finished run used for it."""
    if name not in methods.METHODS:
        raise Http404("No such method page")
    found = (AnalysisRun.objects.filter(study=study, pk=run_id, status=AnalysisRun.Status.DONE)
             .values_list("results__settings", "results__generated_at").first())
    if found is None:
        raise Http404("No finished run with this number")
    used, generated_at = found
    return _method_page(request, name, (study.slug, run_id), study=study, run_id=run_id,
                        generated_at=generated_at,
                        settings_rows=methods.settings_rows(name, used or {}))


@login_required
@require_GET
def references(request: HttpRequest) -> HttpResponse:
    """Every work Concord cites, in full (docs/references.md), one anchor per work."""
    page = methods.render(methods.REFERENCES, _doc_link(None))
    return render(request, "analysis/references.html", {"page": page})
