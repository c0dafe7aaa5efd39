"""The study's sharing page: who has which role, added, changed and removed by an owner."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from core.problems import InputError

from ..decorators import study_view
from ..forms import (
    MemberAddForm,
    MemberRoleForm,
)
from ..models import Study
from ..selectors import (
    Role,
    study_members,
)
from ..services import (
    member_add,
    member_change,
    member_remove,
)


def _sharing_page(request: HttpRequest, study, form: MemberAddForm, *, error: str = "",
                  status: int = 200) -> HttpResponse:
    members = list(study_members(study=study))
    for member in members:
        member.role_form = MemberRoleForm(initial={"role": member.role},
                                          auto_id=f"id_m{member.pk}_%s")
    return render(request, "studies/sharing.html", {
        "study": study, "members": members, "form": form, "error": error,
        "n_owners": sum(m.role == Role.OWNER for m in members),
    }, status=status)


@login_required
@require_http_methods(["GET", "POST"])
@study_view(need=Role.OWNER)
def sharing(request: HttpRequest, study: Study) -> HttpResponse:
    """The study's researchers and their roles (owners only); POST adds one by user name."""
    form = MemberAddForm(request.POST or None)
    if request.method == "POST":
        if form.is_valid():
            try:
                member_add(study=study, user=request.user, **form.cleaned_data)
            except InputError as exc:
                form.add_error(exc.problems[0].column or None, exc.problems[0].message)
            else:
                messages.success(request, f"{form.cleaned_data['username']} can now "
                                 f"{'view' if form.cleaned_data['role'] == Role.VIEWER else 'edit'}"
                                 " this study" + (" and share it." if form.cleaned_data['role']
                                                 == Role.OWNER else "."))
                return redirect("studies:sharing", slug=study.slug)
        return _sharing_page(request, study, form, status=400)
    return _sharing_page(request, study, form)


def _membership(study, pk: int):
    membership = study.memberships.select_related("user").filter(pk=pk).first()
    if membership is None:
        raise Http404("No such researcher in this study")
    return membership


@login_required
@require_POST
@study_view(need=Role.OWNER)
def member_role(request: HttpRequest, study: Study, pk: int) -> HttpResponse:
    """Change a researcher's role (owners only); the last owner stays an owner."""
    membership = _membership(study, pk)
    form = MemberRoleForm(request.POST)
    error = ""
    if not form.is_valid():
        error = "Choose viewer, editor or owner."
    else:
        try:
            member_change(membership=membership, role=form.cleaned_data["role"],
                          user=request.user)
        except InputError as exc:
            error = exc.problems[0].message
        else:
            messages.success(request, f"{membership.user.get_username()} is now "
                                      f"{form.cleaned_data['role']}.")
            return redirect("studies:sharing", slug=study.slug)
    return _sharing_page(request, study, MemberAddForm(), error=error, status=400)


@login_required
@require_http_methods(["GET", "POST"])
@study_view(need=Role.OWNER)
def member_remove_view(request: HttpRequest, study: Study, pk: int) -> HttpResponse:
    """GET: confirm taking a researcher's role away; POST (``confirm=remove``): do it."""
    membership = _membership(study, pk)
    error = ""
    if request.method == "POST":
        if request.POST.get("confirm") != "remove":
            error = "Confirm on this page."
        else:
            try:
                member_remove(membership=membership, user=request.user)
            except InputError as exc:
                error = exc.problems[0].message
            else:
                messages.success(request, f"{membership.user.get_username()} no longer has a "
                                          "role in this study.")
                if membership.user_id == request.user.pk:
                    return redirect("studies:list")
                return redirect("studies:sharing", slug=study.slug)
    return render(request, "studies/member_remove.html", {
        "study": study, "membership": membership, "error": error,
        "self": membership.user_id == request.user.pk,
    }, status=400 if error else 200)


# --- settings, definition files, clones ---------------------------------------------------------
