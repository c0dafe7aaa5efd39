"""The researcher's pages of a study: the list, creation, the study page, its status, history,
links, preview, controls, settings, definition and clone. Every view of a study reads it through
`@study_view` (`study_get`'s rule): no role is a 404, a role below what the page needs (an editor
to change anything) a 403."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import translation
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from core.problems import InputError
from core.tabular import size_over_limit

from ..decorators import study_view
from ..forms import (
    CloneForm,
    ControlsForm,
    CorefUploadForm,
    DefinitionUploadForm,
    DeleteStudyForm,
    InviteForm,
    ItemUploadForm,
    StudyCreateForm,
    StudySettingsForm,
)
from ..models import Membership, Study
from ..selectors import (
    Role,
    item_label_counts,
    participant_progress,
    study_definition,
    study_list,
)
from ..services import (
    controls_generate,
    participants_invite,
    study_actions,
    study_archive,
    study_clone,
    study_create,
    study_create_from_definition,
    study_delete,
    study_transition,
    study_update,
)


@login_required
@require_GET
def study_index(request: HttpRequest) -> HttpResponse:
    """The user's studies; archived ones only with ``?archived=1``."""
    archived = request.GET.get("archived") == "1"
    studies = study_list(user=request.user).filter(archived_at__isnull=not archived)
    return render(request, "studies/list.html", {"studies": studies, "archived": archived})


@login_required
@require_http_methods(["GET", "POST"])
def study_new(request: HttpRequest) -> HttpResponse:
    form = StudyCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            study = study_create(
                owner=request.user, slug=data["slug"], title=data["title"], preset=data["preset"],
                language=data["language"], instructions=data["instructions"],
                consent=data["consent"],
                design={"items_per_participant": data["items_per_participant"],
                        "annotators_per_item": data["annotators_per_item"],
                        "duplicates": data["duplicates"],
                        "duplicate_min_gap": data["duplicate_min_gap"], "seed": data["seed"],
                        "source_order": data["source_order"] or Study.SourceOrder.SPREAD},
            )
        except InputError as exc:
            for problem in exc.problems:
                if problem.column in form.fields:
                    form.add_error(str(problem.column), problem.message)
                else:
                    form.add_error(None, str(problem))
        else:
            return redirect("studies:detail", slug=study.slug)
    return render(request, "studies/new.html", {"form": form})


@login_required
@require_GET
@study_view(need=Role.VIEWER)
def study_detail(request: HttpRequest, study: Study) -> HttpResponse:
    participants = list(participant_progress(study=study))
    n_items = study.items.count()
    open_link = request.build_absolute_uri(reverse("annotation:join", args=[study.open_token]))
    return render(request, "studies/detail.html", {
        "study": study,
        "actions": study_actions(study),
        "can_edit": Membership.allows(study.role, Role.EDITOR),
        "is_owner": Membership.allows(study.role, Role.OWNER),
        "n_items": n_items,
        "n_controls": study.items.filter(is_control=True).count(),
        "labels": item_label_counts(study=study),
        "participants": participants,
        "n_complete": sum(p.is_complete for p in participants),
        "upload_form": ItemUploadForm(),
        "coref_form": CorefUploadForm(),
        "invite_form": InviteForm(),
        "controls_form": ControlsForm(),
        "site": request.build_absolute_uri("/").rstrip("/"),
        "open_link": open_link,
        "prolific_link": open_link + PROLIFIC_QUERY,
    })


# Prolific replaces each {{%NAME%}} with the participant's value when it sends them to the study.
PROLIFIC_QUERY = "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"


# What each confirmation page says (docs/lifecycle.md).
CONFIRM_TEXT = {
    "open": ("Open the study",
             "Annotators can then use their links and the open link. Once open, the study's "
             "questions and scales can no longer change."),
    "pause": ("Pause the study",
              "Nobody can start or go on answering until you open it again; an answer to an item "
              "already on an annotator's screen is still accepted for {grace}. Annotators are "
              "told that their answers are saved and that they can come back."),
    "close": ("Close the study",
              "Nobody can start or go on answering; an answer to an item already on an "
              "annotator's screen is still accepted for {grace}. Annotators are told that their "
              "answers are saved. You can open the study again later."),
    "archive": ("Archive the study",
                "It leaves your list of studies (the list's \"Archived\" link shows it) and "
                "becomes read-only: results and exports stay available. You can unarchive it."),
    "unarchive": ("Unarchive the study",
                  "It comes back to your list of studies and can be changed again."),
}


DONE_TEXT = {"open": "opened", "pause": "paused", "close": "closed", "archive": "archived",
             "unarchive": "unarchived"}


def _grace() -> str:
    seconds = settings.CONCORD_ANSWER_GRACE_SECONDS
    if seconds % 3600 == 0:
        hours = seconds // 3600
        return f"{hours} hour{'s' if hours != 1 else ''}"
    return f"{seconds // 60} minutes"


def _confirm_page(request: HttpRequest, study, action: str, *, status: int = 200,
                  error: str = "") -> HttpResponse:
    title, text = CONFIRM_TEXT[action]
    return render(request, "studies/confirm.html", {
        "study": study, "action": action, "title": title, "text": text.format(grace=_grace()),
        "error": error, "post_url": reverse(f"studies:{action}", kwargs={"slug": study.slug}),
    }, status=status)


@login_required
@require_http_methods(["GET", "POST"])
@study_view(need=Role.EDITOR)
def study_set_status(request: HttpRequest, study: Study, action: str) -> HttpResponse:
    """GET: the confirmation page of a status change; POST (from that page): make it."""
    if request.method == "GET" or request.POST.get("confirm") != action:
        return _confirm_page(request, study, action, status=200 if request.method == "GET" else 400,
                             error="" if request.method == "GET" else "Confirm on this page.")
    try:
        if action in ("archive", "unarchive"):
            study_archive(study=study, archived=action == "archive", user=request.user)
        else:
            study_transition(study=study, action=action, user=request.user)
    except InputError as exc:
        for problem in exc.problems:
            messages.error(request, problem.message)
    else:
        messages.success(request, f"{study.title}: {DONE_TEXT[action]}.")
    return redirect("studies:detail", slug=study.slug)


@login_required
@require_http_methods(["GET", "POST"])
@study_view(need=Role.OWNER)
def study_delete_view(request: HttpRequest, study: Study) -> HttpResponse:
    """Delete a study (owner only) after its slug is typed on the confirmation page."""
    form = DeleteStudyForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            counts = study_delete(study=study, confirm_slug=form.cleaned_data["confirm_slug"],
                                  user=request.user)
        except InputError as exc:
            form.add_error("confirm_slug", exc.problems[0].message)
        else:
            messages.success(request, f"Deleted {study.slug}: {counts['items']} items and "
                                      f"{counts['participants']} participants with their answers.")
            return redirect("studies:list")
    return render(request, "studies/delete.html", {
        "study": study, "form": form,
        "n_items": study.items.count(), "n_participants": study.participants.count(),
    }, status=400 if form.errors else 200)


@login_required
@require_GET
@study_view(need=Role.VIEWER)
def study_history(request: HttpRequest, study: Study) -> HttpResponse:
    """The study's audit trail: every status change and edit, with who and when."""
    events = study.events.select_related("user")[:500]
    return render(request, "studies/history.html", {"study": study, "events": events})


@login_required
@require_POST
@study_view(need=Role.EDITOR)
def invite(request: HttpRequest, study: Study) -> HttpResponse:
    form = InviteForm(request.POST)
    if form.is_valid():
        try:
            created = participants_invite(study=study, count=form.cleaned_data["count"],
                                          label=form.cleaned_data["label"], user=request.user)
        except ValueError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, f"Created {len(created)} invitation link(s).")
    return redirect("studies:detail", slug=study.slug)


@login_required
@require_GET
@study_view(need=Role.VIEWER)
def preview(request: HttpRequest, study: Study) -> HttpResponse:
    """Show an item exactly as an annotator sees it; answers are not stored."""
    items = list(study.items.order_by("position")[:1000])
    try:
        index = max(0, min(int(request.GET.get("n", 0)), len(items) - 1))
    except ValueError:
        index = 0
    with translation.override(study.language):
        return render(request, "annotation/item.html", {
            "study": study,
            "questions": study.question_list,
            "item": items[index] if items else None,
            "client_id": uuid.uuid4(),
            "answered": index,
            "number": index + 1,
            "assigned": len(items),
            "preview": True,
            "preview_prev": index - 1 if index > 0 else None,
            "preview_next": index + 1 if index + 1 < len(items) else None,
        })


@login_required
@require_POST
@study_view(need=Role.EDITOR)
def controls_add(request: HttpRequest, study: Study) -> HttpResponse:
    """Add random control pairs built from the study's own sentences (PRG)."""
    form = ControlsForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Give a number of control pairs between 1 and 1000.")
        return redirect("studies:detail", slug=study.slug)
    try:
        count = controls_generate(study=study, n=form.cleaned_data["n"],
                                  seed=form.cleaned_data["seed"], user=request.user)
    except InputError as exc:
        for problem in exc.problems:
            messages.error(request, problem.message)
    else:
        messages.success(request, f"Added {count} random control pairs.")
    return redirect("studies:detail", slug=study.slug)


@login_required
@require_http_methods(["GET", "POST"])
@study_view(need=Role.VIEWER, post_need=Role.EDITOR)
def study_settings(request: HttpRequest, study: Study) -> HttpResponse:
    """Everything a definition file holds, editable by an editor: all of it while the study is a
    draft; once opened, the texts, completion URL and analysis settings. A viewer reads it."""
    editable = Membership.allows(study.role, Role.EDITOR) and not study.is_archived
    draft = study.status == study.Status.DRAFT
    form = StudySettingsForm(request.POST if request.method == "POST" else None,
                             definition=study_definition(study=study), draft=draft)
    if not editable:
        for field in form.fields.values():
            field.disabled = True
        form.disable_questions()
    if request.method == "POST":
        if not editable:
            return render(request, "studies/settings.html", {
                "study": study, "form": form, "editable": False, "draft": draft,
                "error": "An archived study cannot be changed; unarchive it first."}, status=400)
        if form.is_valid():
            try:
                changed = study_update(study=study, changes=form.changes(), user=request.user)
            except InputError as exc:
                for problem in exc.problems:
                    form.add_problem(problem.column, problem.message)
            else:
                messages.success(request, f"Saved: {', '.join(changed)}." if changed
                                 else "Nothing changed.")
                return redirect("studies:settings", slug=study.slug)
        return render(request, "studies/settings.html", {
            "study": study, "form": form, "editable": editable, "draft": draft}, status=400)
    return render(request, "studies/settings.html", {
        "study": study, "form": form, "editable": editable, "draft": draft})


@login_required
@require_GET
@study_view(need=Role.VIEWER)
def definition_download(request: HttpRequest, study: Study) -> HttpResponse:
    """The study's definition file (JSON): `create_study --definition` reads it back."""
    import json

    body = json.dumps(study_definition(study=study), indent=2, ensure_ascii=False) + "\n"
    response = HttpResponse(body.encode(), content_type="application/json; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{study.slug}.definition.json"'
    return response


@login_required
@require_http_methods(["GET", "POST"])
def study_new_from_definition(request: HttpRequest) -> HttpResponse:
    """Create a study from an uploaded definition file (the caller becomes its owner)."""
    from ..definitions import load_definition

    form = DefinitionUploadForm(request.POST or None, request.FILES or None)
    problems: list[str] = []
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        limit = settings.CONCORD_MAX_UPLOAD_BYTES
        if upload.size > limit:
            problems = [size_over_limit(upload.size, limit=limit)]
        else:
            try:
                definition = load_definition(upload.read(), upload.name or "definition.json")
                study = study_create_from_definition(owner=request.user, definition=definition)
            except InputError as exc:
                problems = [str(p) for p in exc.problems]
            else:
                messages.success(request, f"Created {study.slug} from {upload.name}.")
                return redirect("studies:detail", slug=study.slug)
    return render(request, "studies/new_definition.html", {
        "form": form, "problems": problems,
    }, status=400 if problems or form.errors else 200)


@login_required
@require_http_methods(["GET", "POST"])
@study_view(need=Role.EDITOR)
def study_clone_view(request: HttpRequest, study: Study) -> HttpResponse:
    """Copy a study's settings and items (no participants) to a new draft the caller owns."""
    form = CloneForm(request.POST or None, initial={"slug": f"{study.slug}-copy"[:60]})
    if request.method == "POST" and form.is_valid():
        try:
            clone = study_clone(study=study, slug=form.cleaned_data["slug"],
                                title=form.cleaned_data["title"], user=request.user)
        except InputError as exc:
            for problem in exc.problems:
                form.add_error("slug" if problem.column == "slug" else None, problem.message)
        else:
            messages.success(request, f"Cloned {study.slug} as {clone.slug}.")
            return redirect("studies:detail", slug=clone.slug)
    return render(request, "studies/clone.html", {"study": study, "form": form,
                                                  "n_items": study.items.count()},
                  status=400 if form.errors else 200)
