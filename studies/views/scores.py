"""The study's system-level metric scores: listed, uploaded from a `system,metric,value` file,
and deleted one metric at a time (docs/systems.md)."""

from __future__ import annotations

from typing import cast

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.defaultfilters import filesizeformat
from django.views.decorators.http import require_http_methods, require_POST

from core.problems import InputError, Problem
from core.tabular import size_over_limit

from ..decorators import study_view
from ..forms import SystemScoresForm
from ..models import Membership, Study
from ..selectors import Role, item_labels, system_scores
from ..services import system_scores_delete, system_scores_import


@login_required
@require_http_methods(["GET", "POST"])
@study_view(need=Role.VIEWER, post_need=Role.EDITOR)
def system_scores_page(request: HttpRequest, study: Study) -> HttpResponse:
    """The scores, per metric and system; an editor uploads a file (PRG), whose problems are
    listed on this page with their lines (nothing is changed then)."""
    form = SystemScoresForm(request.POST or None, request.FILES or None)
    error = None
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        limit = settings.CONCORD_MAX_UPLOAD_BYTES
        try:
            if upload.size > limit:
                raise InputError([Problem(upload.name, None, None,
                                          size_over_limit(upload.size, limit=limit))])
            done = system_scores_import(study=study, data=upload.read(), filename=upload.name,
                                        user=cast(User, request.user))
        except InputError as exc:
            error = exc
        else:
            messages.success(request, f"Imported {done.rows} system-level score"
                                      f"{'s' if done.rows != 1 else ''} of "
                                      f"{', '.join(done.metrics)} from {upload.name}.")
            for problem in done.warnings.problems[:20]:
                messages.warning(request, str(problem))
            if done.warnings.count > 20:
                messages.warning(request, f"… and {done.warnings.count - 20} more rows skipped.")
            return redirect("studies:system_scores", slug=study.slug)
    table = system_scores(study=study)
    return render(request, "studies/system_scores.html", {
        "study": study, "form": form, "error": error, "table": table,
        "systems": item_labels(study=study, limit=3)["systems"],
        "can_change": Membership.allows(study.role, Role.EDITOR) and not study.is_archived,
        "max_size": filesizeformat(settings.CONCORD_MAX_UPLOAD_BYTES),
    }, status=400 if error else 200)


@login_required
@require_POST
@study_view(need=Role.EDITOR)
def system_scores_delete_view(request: HttpRequest, study: Study) -> HttpResponse:
    """Delete the scores of the metric named in the form (PRG)."""
    metric = request.POST.get("metric", "")
    try:
        n = system_scores_delete(study=study, metric=metric,
                                 user=cast(User, request.user))
    except InputError as exc:
        messages.error(request, "; ".join(p.message for p in exc.problems))
    else:
        messages.success(request, f"Deleted the {n} system-level scores of {metric}.")
    return redirect("studies:system_scores", slug=study.slug)
