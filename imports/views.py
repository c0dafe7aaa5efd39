"""The researcher's imports in the browser: items (at once, or by a background job for a large
file), coreference items (a gold and a system file), responses collected elsewhere (upload →
preview → confirm; a wide file's columns may first be mapped on screen, `imports.columns`), a
methods bundle replayed as a new study, and the page of an import job (its
progress, then its result or its problems).

A response file, whatever its size, is kept as an `ImportJob` between its check (the preview, on
the job's page) and the confirmation, and validated again on confirm; a small one is checked and
imported in the request, a large one by a worker (`imports.services`). Every view reads the
study through `@study_view` (owner-scoped, 404 for anyone else).
"""

from __future__ import annotations

from typing import cast

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.core.files.uploadedfile import UploadedFile
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from core.problems import Collector, InputError
from core.responses.columns import USE_LABELS, USES, choice_clean, columns_guess
from core.tabular import size_over_limit
from jobs.selectors import job_status
from studies.decorators import study_view
from studies.forms import CorefUploadForm, ItemUploadForm
from studies.models import Study
from studies.selectors import Role, item_label_counts, labels_phrase
from studies.services import coref_items_import, items_import

from .bundles import bundle_import
from .columns import (
    columns_apply,
    columns_awaiting,
    columns_items,
    columns_read,
    columns_upload,
)
from .forms import BundleImportForm, ResponseImportForm
from .models import ImportJob
from .services import (
    SYSTEM,
    coref_import_is_large,
    import_is_large,
    import_job_confirm,
    import_job_create,
    import_job_discard,
    import_job_problems,
    import_job_ran_at_once,
    import_job_run,
    upload_read,
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
        count = items_import(study=study, data=upload.read(), filename=upload.name,
                             user=_user(request))
    except InputError as exc:
        return render(request, "studies/upload_errors.html",
                      {"study": study, "error": exc, "filename": upload.name}, status=400)
    labels = labels_phrase(item_label_counts(study=study))
    messages.success(request, f"Imported {count} items from {upload.name}{labels}.")
    return redirect("studies:detail", slug=study.slug)


# --- Coreference items -----------------------------------------------------------------------


@login_required
@require_POST
@study_view(need=Role.EDITOR)
def coref_upload(request: HttpRequest, study: Study) -> HttpResponse:
    """Add coreference items from a gold and a system file, read as the CoNLL scorer reads them:
    every problem of both files on one page (nothing imported), warnings shown after the import."""
    form = CorefUploadForm(request.POST, request.FILES)
    if not form.is_valid():
        messages.error(request, "Choose a gold file, a system file and their format.")
        return redirect("studies:detail", slug=study.slug)
    gold, system = form.cleaned_data["gold"], form.cleaned_data["system"]
    limit = settings.CONCORD_MAX_UPLOAD_BYTES
    for upload in (gold, system):
        if upload.size > limit:
            messages.error(request, f"{upload.name}: {size_over_limit(upload.size, limit=limit)}."
                                    " Nothing was imported.")
            return redirect("studies:detail", slug=study.slug)
    if coref_import_is_large(gold=gold, system=system):  # a background job, a progress page
        try:
            job = import_job_create(study=study, user=_user(request), what="items", upload=gold,
                                    maps={SYSTEM: system},
                                    options={"coref_format": form.cleaned_data["format"]})
        except InputError as exc:
            return render(request, "studies/upload_errors.html",
                          {"study": study, "error": exc, "filename": gold.name}, status=400)
        return redirect("imports:import_job", slug=study.slug, job_id=job.pk)
    warnings = Collector(gold.name)
    try:
        count = coref_items_import(study=study, gold=gold.read(), system=system.read(),
                                   gold_name=gold.name, system_name=system.name,
                                   fmt=form.cleaned_data["format"], warnings=warnings,
                                   user=_user(request))
    except InputError as exc:
        return render(request, "studies/upload_errors.html",
                      {"study": study, "error": exc, "filename": gold.name}, status=400)
    messages.success(request, f"Imported {count} coreference item{'s' if count != 1 else ''} "
                              f"from {gold.name} and {system.name}.")
    if warnings:
        shown = "; ".join(str(p) for p in warnings.problems[:10])
        more = f" (and {warnings.count - 10} more)" if warnings.count > 10 else ""
        messages.warning(request, f"{warnings.count} warning(s), read as the CoNLL scorer reads "
                                  f"the files: {shown}{more}")
    return redirect("studies:detail", slug=study.slug)


# --- Responses collected elsewhere -----------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
@study_view(need=Role.EDITOR)
def responses_upload(request: HttpRequest, study: Study) -> HttpResponse:
    """Keep the file and check it (a dry run): a small one at once, a large one by a worker;
    then its job's page previews it. A small file's problems are listed on this page."""
    questions = study.question_list
    # A study that asks only comparative questions takes judgments files: offered first.
    only_comparative = bool(questions) and all(q.is_comparative for q in questions)
    form = ResponseImportForm(request.POST or None, request.FILES or None,
                              initial={"format": "judgments"} if only_comparative else None)
    error = None
    mapper = request.POST.get("action") == "map"
    if mapper and form.is_valid() and form.cleaned_data["format"] != "wide":
        form.add_error("format", "The column mapper reads wide files (one row per annotator); "
                                 "a long file's columns are fixed.")
    if request.method == "POST" and mapper and form.is_valid():
        try:  # keep the file, then map its columns on screen
            job = columns_upload(study=study, user=_user(request),
                                 upload=form.cleaned_data["file"],
                                 value_map=form.cleaned_data["value_map"])
        except InputError as exc:
            error = exc
        else:
            return redirect("imports:columns", slug=study.slug, job_id=job.pk)
    elif request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            job = import_job_create(
                study=study, user=_user(request), what=ImportJob.What.RESPONSES,
                upload=data["file"],
                options={"fmt": data["format"], "meta_columns": data["meta_columns"],
                         "annotator_column": data["annotator_column"].strip()},
                maps={"item_map": data["item_map"], "value_map": data["value_map"]},
                dry_run=True, enqueue=False)
        except InputError as exc:
            error = exc
        else:
            job = import_job_run(job=job)
            error = import_job_problems(job=job) if import_job_ran_at_once(job=job) else None
            if error is None:
                # A broker that did not take a large file's job: its page says so.
                return redirect("imports:import_job", slug=study.slug, job_id=job.pk)
    return render(request, "imports/import_responses.html",
                  {"study": study, "form": form, "error": error},
                  status=400 if error or form.errors else 200)


@login_required
@require_http_methods(["GET", "POST"])
@study_view(need=Role.EDITOR)
def columns_view(request: HttpRequest, study: Study, job_id: int) -> HttpResponse:
    """Map each column of a kept wide file (item and question, annotator id, metadata, ignore),
    guessed from the headers; a valid mapping starts the file's check, whose page previews it.
    Every problem is listed with its column, the file kept to map again."""
    job = get_object_or_404(ImportJob, pk=job_id, study=study, what=ImportJob.What.RESPONSES)
    if not columns_awaiting(job):
        raise Http404("This file was already mapped, cancelled or deleted")
    columns, error = columns_read(job=job), None
    ids, texts = columns_items(study=study)
    if request.method == "POST":
        choices = [choice_clean(use=request.POST.get(f"use-{c.number}", ""),
                                item=request.POST.get(f"item-{c.number}", ""),
                                question=request.POST.get(f"question-{c.number}", ""))
                   for c in columns]
        try:
            check = columns_apply(job=job, user=_user(request), choices=choices)
        except InputError as exc:
            error = exc
        else:
            return redirect("imports:import_job", slug=study.slug, job_id=check.pk)
    else:
        choices = columns_guess([c.header for c in columns], items=texts,
                                questions={q.key: q.prompt for q in study.question_list})
    return render(request, "imports/columns.html", {
        "study": study, "job": job, "error": error, "rows": list(zip(columns, choices, strict=True)),
        "uses": [(use, USE_LABELS[use]) for use in USES], "item_ids": ids,
        "questions": study.question_list,
    }, status=400 if error else 200)


@login_required
@require_GET
@study_view(need=Role.EDITOR)
def import_job_detail(request: HttpRequest, study: Study, job_id: int) -> HttpResponse:
    """A background import: its progress (js/jobs.js polls), then its result or its problems."""
    job = get_object_or_404(ImportJob, pk=job_id, study=study)
    if columns_awaiting(job):  # a kept file whose columns are not mapped yet
        return redirect("imports:columns", slug=study.slug, job_id=job.pk)
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
    """Import the file a finished check previewed (a new job; a double click imports once): a
    small one at once, then back to the study (its problems, if it no longer passes, on the
    upload page); a large one by a worker, whose page shows the progress."""
    job = get_object_or_404(ImportJob, pk=job_id, study=study)
    new = import_job_run(job=import_job_confirm(job=job, user=_user(request), enqueue=False))
    if import_job_ran_at_once(job=new):
        if new.status == ImportJob.Status.DONE:
            messages.success(request, new.message)
            return redirect("studies:detail", slug=study.slug)
        error = import_job_problems(job=new)
        if error is not None:
            return render(request, "imports/import_responses.html",
                          {"study": study, "form": ResponseImportForm(), "error": error},
                          status=400)
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


# --- A methods bundle, replayed as a new study -----------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def bundle_import_view(request: HttpRequest) -> HttpResponse:
    """Replay an uploaded methods bundle as a new closed study the caller owns (synchronous:
    bounded by CONCORD_BUNDLE_MAX_BYTES and CONCORD_BUNDLE_SYNC_MAX_ROWS answer rows)."""
    form = BundleImportForm(request.POST or None, request.FILES or None)
    problems: list[str] = []
    if request.method == "POST" and form.is_valid():
        try:
            upload = upload_read(form.cleaned_data["file"],
                                 max_bytes=settings.CONCORD_BUNDLE_MAX_BYTES)
            done = bundle_import(data=upload.data, filename=upload.filename, owner=_user(request),
                                 slug=form.cleaned_data["slug"] or None,
                                 max_rows=settings.CONCORD_BUNDLE_SYNC_MAX_ROWS)
        except InputError as exc:
            problems = [str(p) for p in exc.problems]
            if exc.omitted:
                problems.append(f"… and {exc.omitted} more")
        else:
            messages.success(request, f"Created {done.study.slug} from {upload.filename}: "
                                      f"{done.annotators} annotators, {done.answers} answers.")
            return redirect("studies:detail", slug=done.study.slug)
    return render(request, "imports/bundle_import.html", {
        "form": form, "problems": problems,
        "max_mib": settings.CONCORD_BUNDLE_MAX_BYTES // (1024 * 1024),
        "max_rows": settings.CONCORD_BUNDLE_SYNC_MAX_ROWS,
        # 20 000, as the docs write numbers (a space between the thousands)
        "max_rows_text": f"{settings.CONCORD_BUNDLE_SYNC_MAX_ROWS:,}".replace(",", "\u202f"),
    }, status=400 if problems or form.errors else 200)
