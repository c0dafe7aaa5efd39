"""The judges page of a study (`/studies/<slug>/judges/`): its judges and their runs, an
upload of a judge's answers (editor), and the deletion of a run or a judge behind a
confirmation page (docs/judges.md)."""

from __future__ import annotations

from typing import cast

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.defaultfilters import filesizeformat
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_http_methods

from core.problems import InputError, Problem
from core.tabular import size_over_limit
from studies.decorators import study_view
from studies.models import Membership, Study
from studies.selectors import Role

from .forms import JudgeUploadForm
from .models import Judge, JudgeRun
from .selectors import judge_list
from .services import judge_answers_upload, judge_delete, judge_run_delete


@login_required
@require_http_methods(["GET", "POST"])
@study_view(need=Role.VIEWER, post_need=Role.EDITOR)
def judges_page(request: HttpRequest, study: Study) -> HttpResponse:
    """The judges and their runs; an editor uploads a judge's file (PRG), whose problems are
    listed on this page with their lines (nothing is stored then)."""
    form = JudgeUploadForm(request.POST or None, request.FILES or None)
    error = None
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        limit = settings.CONCORD_MAX_UPLOAD_BYTES
        try:
            if upload.size > limit:
                raise InputError([Problem(upload.name, None, None,
                                          size_over_limit(upload.size, limit=limit))])
            done = judge_answers_upload(
                study=study, name=form.cleaned_data["name"], data=upload.file,
                filename=upload.name or "judge.csv", run=form.cleaned_data["run"],
                replace=form.cleaned_data["replace"], user=cast(User, request.user),
                **form.metadata())
        except InputError as exc:
            error = exc
        else:
            messages.success(request, ngettext(
                "Imported %(n)d answers of %(judge)s into run %(runs)s.",
                "Imported %(n)d answers of %(judge)s into runs %(runs)s.",
                len(done.runs)) % {"n": done.answers, "judge": done.judge.name,
                                   "runs": ", ".join(done.runs)})
            for warning in done.warnings:
                messages.warning(request, warning)
            return redirect("judges:list", slug=study.slug)
    return render(request, "judges/judges.html", {
        "study": study, "form": form, "error": error, "judges": judge_list(study=study),
        "can_change": Membership.allows(getattr(study, "role", None), Role.EDITOR) and not study.is_archived,
        "max_size": filesizeformat(settings.CONCORD_MAX_UPLOAD_BYTES),
    }, status=400 if error or form.errors else 200)


@login_required
@require_http_methods(["GET", "POST"])
@study_view(need=Role.EDITOR)
def run_delete(request: HttpRequest, study: Study, run_id: int) -> HttpResponse:
    """GET: what deleting the run removes, and a confirmation. POST: delete it (PRG)."""
    run = get_object_or_404(JudgeRun.objects.select_related("judge"), pk=run_id,
                            judge__study=study)
    if request.method == "POST":
        try:
            n = judge_run_delete(run=run, user=cast(User, request.user))
        except InputError as exc:
            messages.error(request, "; ".join(p.message for p in exc.problems))
        else:
            messages.success(request, _("Deleted run %(run)s of %(judge)s (%(n)d answers).")
                             % {"run": run.label, "judge": run.judge.name, "n": n})
        return redirect("judges:list", slug=study.slug)
    return render(request, "judges/delete.html", {
        "study": study, "judge": run.judge, "run": run, "answers": run.n_answers})


@login_required
@require_http_methods(["GET", "POST"])
@study_view(need=Role.EDITOR)
def judge_delete_view(request: HttpRequest, study: Study, judge_id: int) -> HttpResponse:
    """GET: what deleting the judge removes, and a confirmation. POST: delete it (PRG)."""
    judge = get_object_or_404(Judge, pk=judge_id, study=study)
    if request.method == "POST":
        try:
            counts = judge_delete(judge=judge, user=cast(User, request.user))
        except InputError as exc:
            messages.error(request, "; ".join(p.message for p in exc.problems))
        else:
            messages.success(request, _("Deleted the judge %(judge)s, its %(runs)d runs and "
                                        "%(answers)d answers.")
                             % {"judge": judge.name, **counts})
        return redirect("judges:list", slug=study.slug)
    runs = list(judge.runs.values_list("n_answers", flat=True))
    return render(request, "judges/delete.html", {
        "study": study, "judge": judge, "run": None, "runs": len(runs), "answers": sum(runs)})
