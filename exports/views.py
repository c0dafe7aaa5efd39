"""Export downloads: streamed for small studies, background jobs with a progress page for large
ones, and the owner's pseudonym mapping.

Every view reads the study through `@study_view` (404 without a role in it; the pseudonym mapping, real ids, needs an editor) and asks the
services and selectors of this app for the rest.
"""

from __future__ import annotations

from typing import TypeVar, cast

from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import (
    FileResponse,
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBase,
    JsonResponse,
    StreamingHttpResponse,
)
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from core.formats import csv_chunks
from studies.decorators import study_view
from studies.models import Study
from studies.selectors import Role

from .models import ExportJob
from .selectors import (
    PSEUDONYM_COLUMNS,
    export_is_large,
    export_job_file,
    export_job_status,
    pseudonym_rows,
)
from .services import CONTENT_TYPES, ExportError, export_job_create, export_open, export_validate

ResponseT = TypeVar("ResponseT", bound=HttpResponseBase)


@login_required
@require_http_methods(["GET", "POST"])
@study_view(need=Role.VIEWER)
def download(request: HttpRequest, study: Study, what: str, fmt: str) -> HttpResponseBase:
    """GET: stream the export (small study) or offer a background job. POST: start the job."""
    try:
        what, fmt = export_validate(what=what, fmt=fmt)
    except ExportError:
        raise Http404("No such export") from None
    if request.method == "POST":
        # The account `login_required` let through.
        job = export_job_create(study=study, user=cast(User, request.user), what=what, fmt=fmt)
        if job.status == ExportJob.Status.FAILED:  # the broker did not answer: say so now
            response = _job_page(request, study, job, status=503)
            response["Retry-After"] = "30"
            return response
        return redirect("exports:job", slug=study.slug, job_id=job.pk)
    if request.GET.get("background") == "1" or export_is_large(study=study, what=what):
        return render(request, "exports/start.html",
                      {"study": study, "what": what, "fmt": fmt, "action": request.path})
    try:
        export = export_open(study=study, what=what, fmt=fmt)
    except ExportError as exc:
        return render(request, "exports/unavailable.html",
                      {"study": study, "message": str(exc)}, status=409)
    return _attachment(StreamingHttpResponse(export.chunks, content_type=export.content_type),
                       export.filename)


def _attachment(response: ResponseT, filename: str) -> ResponseT:
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["Cache-Control"] = "no-store"
    return response


def _job(study: Study, job_id: int) -> ExportJob:
    return get_object_or_404(ExportJob, pk=job_id, study=study)


@login_required
@require_GET
@study_view(need=Role.VIEWER)
def job_detail(request: HttpRequest, study: Study, job_id: int) -> HttpResponse:
    """The job's progress; works without scripts (a refresh link), js/jobs.js polls."""
    return _job_page(request, study, _job(study, job_id))


def _job_page(request: HttpRequest, study: Study, job: ExportJob,
              status: int = 200) -> HttpResponse:
    slug = study.slug
    return render(request, "exports/job.html", {
        "study": study, "job": job, "status": export_job_status(job=job),
        "filename": f"{study.slug}-{job.what}.{job.format}",
        "status_url": reverse("exports:job_status", kwargs={"slug": slug, "job_id": job.pk}),
        "download_url": reverse("exports:job_download", kwargs={"slug": slug, "job_id": job.pk}),
    }, status=status)


@login_required
@require_GET
@study_view(need=Role.VIEWER)
def job_status(request: HttpRequest, study: Study, job_id: int) -> JsonResponse:
    job = _job(study, job_id)
    status = export_job_status(job=job)
    if job.status == ExportJob.Status.DONE:
        status["download_url"] = reverse("exports:job_download",
                                         kwargs={"slug": study.slug, "job_id": job.pk})
    response = JsonResponse(status)
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_GET
@study_view(need=Role.VIEWER)
def job_download(request: HttpRequest, study: Study, job_id: int) -> FileResponse:
    job = _job(study, job_id)
    path = export_job_file(job=job)
    if path is None:
        raise Http404("This export is not ready")
    response = FileResponse(path.open("rb"), as_attachment=True,
                            filename=f"{study.slug}-{job.what}.{job.format}",
                            content_type=CONTENT_TYPES[job.format])
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_GET
@study_view(need=Role.EDITOR)
def pseudonyms_download(request: HttpRequest, study: Study) -> HttpResponse:
    """The researcher's key from pseudonyms (A1, A2, …) to the real annotator ids."""
    body = b"".join(csv_chunks(PSEUDONYM_COLUMNS, pseudonym_rows(study=study)))
    return _attachment(HttpResponse(body, content_type="text/csv; charset=utf-8"),
                       f"{study.slug}-pseudonyms.csv")
