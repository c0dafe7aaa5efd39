"""The researcher's upload page for responses collected elsewhere: upload → preview → confirm.

The uploaded bytes stay on the server between the preview and the confirmation (see
`annotation.importing.pending_import_*`) and are validated again on confirm. Every view reads
the study through `study_get` (owner-scoped, 404 for anyone else).
"""

from __future__ import annotations

import csv

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from analysis.export_formats import neutralise
from studies.problems import InputError
from studies.selectors import study_get

from .importing import (
    pending_import_confirm,
    pending_import_create,
    pending_import_discard,
    pending_import_get,
    responses_import,
    upload_read,
)
from .selectors import participant_pseudonyms


class ResponseImportForm(forms.Form):
    file = forms.FileField(help_text="CSV or TSV, UTF-8 (with or without BOM).")
    format = forms.ChoiceField(
        choices=[("wide", "Wide: one row per annotator, one column per item (Google Forms)"),
                 ("long", "Long: annotator, item, value[, duration_ms, position]")],
        widget=forms.RadioSelect, initial="wide")
    annotator_column = forms.CharField(
        max_length=500, required=False,
        help_text="Wide: the column holding the annotator id, e.g. Email address.")
    item_map = forms.FileField(required=False, help_text="CSV column,item (wide headers → item ids).")
    value_map = forms.FileField(required=False, help_text="CSV label,value (option labels → values).")
    meta_columns = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Columns kept as participant metadata, one per line.")

    def clean_meta_columns(self) -> list[str]:
        return [line.strip() for line in self.cleaned_data["meta_columns"].splitlines()
                if line.strip()]


@login_required
@require_http_methods(["GET", "POST"])
def responses_upload(request: HttpRequest, slug: str) -> HttpResponse:
    study = study_get(user=request.user, slug=slug)
    form = ResponseImportForm(request.POST or None, request.FILES or None)
    problems = []
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            key, _ = pending_import_create(
                study=study, user=request.user, upload=upload_read(data["file"]),
                fmt=data["format"], annotator_column=data["annotator_column"].strip(),
                meta_columns=data["meta_columns"],
                item_map=upload_read(data["item_map"]) if data["item_map"] else None,
                value_map=upload_read(data["value_map"]) if data["value_map"] else None,
            )
        except InputError as exc:
            problems = exc.problems
        else:
            return redirect("studies:responses_import_preview", slug=slug, key=key)
    return render(request, "annotation/import_responses.html",
                  {"study": study, "form": form, "problems": problems},
                  status=400 if problems or form.errors else 200)


@login_required
@require_http_methods(["GET", "POST"])
def responses_preview(request: HttpRequest, slug: str, key: str) -> HttpResponse:
    """GET: what the file holds (validated again). POST: import it, then back to the study."""
    study = study_get(user=request.user, slug=slug)
    try:
        if request.method == "POST":
            summary = pending_import_confirm(study=study, user=request.user, key=key)
            messages.success(request, f"Imported {summary.answers} answers of "
                                      f"{len(summary.annotators)} annotators from {summary.filename}.")
            return redirect("studies:detail", slug=slug)
        pending = pending_import_get(study=study, user=request.user, key=key)
        summary = responses_import(
            study=study, data=pending.upload.data, filename=pending.upload.filename,
            fmt=pending.fmt, annotator_column=pending.annotator_column or None,
            item_map=pending.item_map, value_map=pending.value_map,
            meta_columns=pending.meta_columns, dry_run=True)
    except InputError as exc:
        return render(request, "annotation/import_responses.html",
                      {"study": study, "form": ResponseImportForm(), "problems": exc.problems},
                      status=400)
    return render(request, "annotation/import_preview.html",
                  {"study": study, "summary": summary, "pending": pending, "key": key})


@login_required
@require_POST
def responses_cancel(request: HttpRequest, slug: str, key: str) -> HttpResponse:
    study = study_get(user=request.user, slug=slug)
    pending_import_discard(study=study, user=request.user, key=key)
    messages.info(request, "The upload was discarded; nothing was imported.")
    return redirect("studies:detail", slug=slug)


@login_required
@require_GET
def pseudonyms_download(request: HttpRequest, slug: str) -> HttpResponse:
    """The researcher's key from pseudonyms (A1, A2, …) to the real annotator ids."""
    study = study_get(user=request.user, slug=slug)
    names = participant_pseudonyms(study_id=study.pk)
    people = {p.pk: p for p in study.participants.filter(pk__in=list(names))}
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{study.slug}-pseudonyms.csv"'
    response["Cache-Control"] = "no-store"
    writer = csv.writer(response)
    writer.writerow(["pseudonym", "source", "external_id", "label"])
    for pid, name in names.items():
        p = people[pid]
        writer.writerow([name, p.source, neutralise(p.external_id), neutralise(p.label)])
    return response
