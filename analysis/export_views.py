"""Export downloads: streamed for small studies, background jobs with a progress page for large ones.

Every view reads the study through `study_get` (owner-scoped: 404 for anyone else) and asks the
services in `analysis.exports` for the rest. URLs are reversed in the namespace the request came
through, so the routes work wherever `analysis.export_urls` is included.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import (
    FileResponse,
    Http404,
    HttpRequest,
    HttpResponse,
    JsonResponse,
    StreamingHttpResponse,
)
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from studies.selectors import study_get

from .exports import (
    CONTENT_TYPES,
    ExportError,
    export_is_large,
    export_job_create,
    export_job_file,
    export_job_status,
    export_open,
    export_validate,
)
from .models import ExportJob


def _url(request: HttpRequest, name: str, **kwargs) -> str:
    namespace = request.resolver_match.namespace
    return reverse(f"{namespace}:{name}" if namespace else name, kwargs=kwargs)


@login_required
@require_http_methods(["GET", "POST"])
def download(request: HttpRequest, slug: str, what: str, fmt: str) -> HttpResponse:
    """GET: stream the export (small study) or offer a background job. POST: start the job."""
    study = study_get(user=request.user, slug=slug)
    try:
        what, fmt = export_validate(what=what, fmt=fmt)
    except ExportError:
        raise Http404("No such export") from None
    if request.method == "POST":
        job = export_job_create(study=study, user=request.user, what=what, fmt=fmt)
        return redirect(_url(request, "job", slug=slug, job_id=job.pk))
    if request.GET.get("background") == "1" or export_is_large(study=study, what=what):
        return render(request, "analysis/exports/start.html",
                      {"study": study, "what": what, "fmt": fmt, "action": request.path})
    try:
        export = export_open(study=study, what=what, fmt=fmt)
    except ExportError as exc:
        return render(request, "analysis/exports/unavailable.html",
                      {"study": study, "message": str(exc)}, status=409)
    response = StreamingHttpResponse(export.chunks, content_type=export.content_type)
    response["Content-Disposition"] = f'attachment; filename="{export.filename}"'
    response["Cache-Control"] = "no-store"
    return response


def _job(request: HttpRequest, slug: str, job_id: int):
    study = study_get(user=request.user, slug=slug)
    return study, get_object_or_404(ExportJob, pk=job_id, study=study)


@login_required
@require_GET
def job_detail(request: HttpRequest, slug: str, job_id: int) -> HttpResponse:
    """The job's progress; works without scripts (a reload link), js/exports.js polls."""
    study, job = _job(request, slug, job_id)
    return render(request, "analysis/exports/job.html", {
        "study": study, "job": job, "status": export_job_status(job=job),
        "filename": f"{study.slug}-{job.what}.{job.format}",
        "status_url": _url(request, "job_status", slug=slug, job_id=job.pk),
        "download_url": _url(request, "job_download", slug=slug, job_id=job.pk),
    })


@login_required
@require_GET
def job_status(request: HttpRequest, slug: str, job_id: int) -> JsonResponse:
    study, job = _job(request, slug, job_id)
    status = export_job_status(job=job)
    if job.status == ExportJob.Status.DONE:
        status["download_url"] = _url(request, "job_download", slug=slug, job_id=job.pk)
    response = JsonResponse(status)
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_GET
def job_download(request: HttpRequest, slug: str, job_id: int) -> FileResponse:
    study, job = _job(request, slug, job_id)
    path = export_job_file(job=job)
    if path is None:
        raise Http404("This export is not ready")
    response = FileResponse(path.open("rb"), as_attachment=True,
                            filename=f"{study.slug}-{job.what}.{job.format}",
                            content_type=CONTENT_TYPES[job.format])
    response["Cache-Control"] = "no-store"
    return response
