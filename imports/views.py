"""The researcher's imports in the browser: items (at once, or by a background job for a large
file) and responses collected elsewhere (upload → preview → confirm), and the page of an import
job (its progress, then its result or its problems).

A small response file's bytes stay on the server between the preview and the confirmation (see
`annotation.services.pending_import_*`) and are validated again on confirm. Every view reads
the study through `@study_view` (owner-scoped, 404 for anyone else).
"""

from __future__ import annotations

from typing import Any, cast

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.core.files.uploadedfile import UploadedFile
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation.services import (
    pending_import_confirm,
    pending_import_create,
    pending_import_discard,
    pending_import_get,
    responses_import,
    upload_read,
)
from core.problems import InputError
from core.tabular import size_over_limit
from jobs.selectors import job_status
from studies.decorators import study_view
from studies.forms import ItemUploadForm
from studies.models import Study
from studies.selectors import Role
from studies.services import items_import

from .forms import ResponseImportForm
from .models import ImportJob
from .services import (
    import_is_large,
    import_job_confirm,
    import_job_create,
    import_job_discard,
    import_job_problems,
)


def _user(request: HttpRequest) -> User:
    """The account `login_required` let through (every view here is under it)."""
    return cast(User, request.user)


# --- Items ------------------------------------------------------------------------------------


@login_required
@require_POST
@study_view(need=Role.EDITOR)
def items_upload(request: HttpRequest, study: Study) -> HttpResponse:
    """Add the items of an uploaded file: at once, or by a background job for a large file. Its
    address is the study's item list's (config/urls.py sends a POST there here)."""
    form = ItemUploadForm(request.POST, request.FILES)
    if form.has_error("file", code="empty"):
        empty = request.FILES.get("file")
        name = empty.name if isinstance(empty, UploadedFile) else ""
        messages.error(request, f"{name}: the file is empty. "
                                "Nothing was imported.")
        return redirect("studies:detail", slug=study.slug)
    if not form.is_valid():
        messages.error(request, "Choose a file to upload.")
        return redirect("studies:detail", slug=study.slug)
    upload = form.cleaned_data["file"]
    if upload.size > settings.CONCORD_MAX_UPLOAD_BYTES:
        messages.error(request, f"{upload.name}: "
                                f"{size_over_limit(upload.size, limit=settings.CONCORD_MAX_UPLOAD_BYTES)}."
                                " Nothing was imported.")
        return redirect("studies:detail", slug=study.slug)
    if import_is_large(upload):  # imported by a background job, with a progress page
        try:
            job = import_job_create(study=study, user=_user(request), what="items",
                                    upload=upload)
        except InputError as exc:
            return render(request, "studies/upload_errors.html",
                          {"study": study, "error": exc, "filename": upload.name}, status=400)
        return redirect("imports:import_job", slug=study.slug, job_id=job.pk)
    try:
        count = items_import(study=study, data=upload.read(), filename=upload.name)
    except InputError as exc:
        return render(request, "studies/upload_errors.html",
                      {"study": study, "error": exc, "filename": upload.name}, status=400)
    messages.success(request, f"Imported {count} items from {upload.name}.")
    return redirect("studies:detail", slug=study.slug)


# --- Responses collected elsewhere -----------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
@study_view(need=Role.EDITOR)
def responses_upload(request: HttpRequest, study: Study) -> HttpResponse:
    form = ResponseImportForm(request.POST or None, request.FILES or None)
    error = None
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        if import_is_large(data["file"]):  # checked by a job, then previewed on its page
            return _import_job_start(request, study, data)
        try:
            key, _pending = pending_import_create(
                study=study, user=_user(request), upload=upload_read(data["file"]),
                fmt=data["format"], annotator_column=data["annotator_column"].strip(),
                meta_columns=data["meta_columns"],
                item_map=upload_read(data["item_map"]) if data["item_map"] else None,
                value_map=upload_read(data["value_map"]) if data["value_map"] else None,
            )
        except InputError as exc:
            error = exc
        else:
            return redirect("imports:responses_import_preview", slug=study.slug, key=key)
    return render(request, "imports/import_responses.html",
                  {"study": study, "form": form, "error": error},
                  status=400 if error or form.errors else 200)


def _import_job_start(request: HttpRequest, study: Study, data: dict[str, Any]) -> HttpResponse:
    try:
        job = import_job_create(
            study=study, user=_user(request), what=ImportJob.What.RESPONSES, upload=data["file"],
            options={"fmt": data["format"], "meta_columns": data["meta_columns"],
                     "annotator_column": data["annotator_column"].strip()},
            maps={"item_map": data["item_map"], "value_map": data["value_map"]}, dry_run=True)
    except InputError as exc:
        return render(request, "imports/import_responses.html",
                      {"study": study, "form": ResponseImportForm(), "error": exc}, status=400)
    # A broker that did not take the job: the page says so (the job failed with the reason).
    return redirect("imports:import_job", slug=study.slug, job_id=job.pk)


@login_required
@require_GET
@study_view(need=Role.EDITOR)
def import_job_detail(request: HttpRequest, study: Study, job_id: int) -> HttpResponse:
    """A background import: its progress (js/jobs.js polls), then its result or its problems."""
    job = get_object_or_404(ImportJob, pk=job_id, study=study)
    return render(request, "imports/import_job.html", {
        "study": study, "job": job, "status": job_status(job=job),
        "error": import_job_problems(job=job),
        "status_url": reverse("imports:import_job_status",
                              kwargs={"slug": study.slug, "job_id": job.pk}),
        "refresh_url": reverse("imports:import_job", kwargs={"slug": study.slug,
                                                                "job_id": job.pk}),
    })


@login_required
@require_POST
@study_view(need=Role.EDITOR)
def import_job_confirm_view(request: HttpRequest, study: Study, job_id: int) -> HttpResponse:
    """Import the file a finished check previewed (a new job; a double click imports once)."""
    job = get_object_or_404(ImportJob, pk=job_id, study=study)
    new = import_job_confirm(job=job, user=_user(request))
    return redirect("imports:import_job", slug=study.slug, job_id=new.pk)


@login_required
@require_POST
@study_view(need=Role.EDITOR)
def import_job_cancel_view(request: HttpRequest, study: Study, job_id: int) -> HttpResponse:
    import_job_discard(job=get_object_or_404(ImportJob, pk=job_id, study=study))
    messages.info(request, "The upload was discarded; nothing was imported.")
    return redirect("studies:detail", slug=study.slug)


@login_required
@require_GET
@study_view(need=Role.EDITOR)
def import_job_status_view(request: HttpRequest, study: Study, job_id: int) -> JsonResponse:
    job = get_object_or_404(ImportJob, pk=job_id, study=study)
    response = JsonResponse(job_status(job=job))
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_http_methods(["GET", "POST"])
@study_view(need=Role.EDITOR)
def responses_preview(request: HttpRequest, study: Study, key: str) -> HttpResponse:
    """GET: what the file holds (validated again). POST: import it, then back to the study."""
    try:
        if request.method == "POST":
            summary = pending_import_confirm(study=study, user=_user(request), key=key)
            messages.success(request, f"Imported {summary.answers} answers of "
                                      f"{len(summary.annotators)} annotators from {summary.filename}.")
            return redirect("studies:detail", slug=study.slug)
        pending = pending_import_get(study=study, user=_user(request), key=key)
        summary = responses_import(
            study=study, data=pending.upload.data, filename=pending.upload.filename,
            fmt=pending.fmt, annotator_column=pending.annotator_column or None,
            item_map=pending.item_map, value_map=pending.value_map,
            meta_columns=pending.meta_columns, dry_run=True)
    except InputError as exc:
        return render(request, "imports/import_responses.html",
                      {"study": study, "form": ResponseImportForm(), "error": exc}, status=400)
    return render(request, "imports/import_preview.html",
                  {"study": study, "summary": summary, "pending": pending, "key": key})


@login_required
@require_POST
@study_view(need=Role.EDITOR)
def responses_cancel(request: HttpRequest, study: Study, key: str) -> HttpResponse:
    pending_import_discard(study=study, user=_user(request), key=key)
    messages.info(request, "The upload was discarded; nothing was imported.")
    return redirect("studies:detail", slug=study.slug)
