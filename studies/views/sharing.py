"""The study's sharing page: who has which role, added, changed and removed by an owner."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from core.problems import InputError

from ..accounts import invite_allowed
from ..decorators import study_view
from ..forms import (
    MemberAddForm,
    MemberInviteForm,
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
    member_invite,
    member_remove,
)

ROLE_WORDS = {Role.VIEWER: "view this study.", Role.EDITOR: "edit this study.",
              Role.OWNER: "edit this study and share it."}


def _sharing_page(request: HttpRequest, study, form: MemberAddForm, *, error: str = "",
                  status: int = 200, invite_form: MemberInviteForm | None = None,
                  too_many: bool = False) -> HttpResponse:
    members = list(study_members(study=study))
    for member in members:
        member.role_form = MemberRoleForm(initial={"role": member.role},
                                          auto_id=f"id_m{member.pk}_%s")
    return render(request, "studies/sharing.html", {
        "study": study, "members": members, "form": form, "error": error,
        "n_owners": sum(m.role == Role.OWNER for m in members),
        "invite_form": invite_form or MemberInviteForm(auto_id="id_invite_%s"),
        "too_many": too_many, "invites_per_hour": settings.CONCORD_INVITES_PER_HOUR,
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
                                 + ROLE_WORDS[form.cleaned_data["role"]])
                return redirect("studies:sharing", slug=study.slug)
        return _sharing_page(request, study, form, status=400)
    return _sharing_page(request, study, form)


@login_required
@require_POST
@study_view(need=Role.OWNER)
def member_invite_view(request: HttpRequest, study: Study) -> HttpResponse:
    """Share the study by e-mail address (owners only): an address without an account gets one
    and a mail to choose its password; at most CONCORD_INVITES_PER_HOUR an hour per owner."""
    form = MemberInviteForm(request.POST, auto_id="id_invite_%s")
    if not form.is_valid():
        return _sharing_page(request, study, MemberAddForm(), invite_form=form, status=400)
    if not invite_allowed(user=request.user):
        response = _sharing_page(request, study, MemberAddForm(), invite_form=form,
                                 too_many=True, status=429)
        response["Retry-After"] = "3600"
        return response
    try:
        done = member_invite(study=study, user=request.user,
                             site_url=request.build_absolute_uri("/"), **form.cleaned_data)
    except InputError as exc:
        form.add_error(exc.problems[0].column or None, exc.problems[0].message)
        return _sharing_page(request, study, MemberAddForm(), invite_form=form, status=400)
    name, can = done.membership.user.get_username(), ROLE_WORDS[done.membership.role]
    text = (f"Account {name} made for {done.membership.user.email}: it can now {can}"
            if done.new_account else
            f"An account with this e-mail address already exists ({name}) and was added: it "
            f"can now {can}")
    link = not done.membership.user.has_usable_password()
    if done.mailed:
        messages.success(request, text + (" A mail with a link to choose the password was sent."
                                          if link else " A mail tells them."))
    else:
        messages.warning(request, text + " The mail could not be sent (the site's mail server "
                         "failed): tell them yourself" + (", and to use “Forgot your password?” "
                                                         "on the log-in page." if link else "."))
    return redirect("studies:sharing", slug=study.slug)


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
