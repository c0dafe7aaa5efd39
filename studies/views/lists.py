"""The study's paged, searchable lists (htmx): its items, each item's page and edits, its
participants and the actions on them."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from core.problems import InputError

from ..decorators import study_view
from ..forms import (
    ComparisonsForm,
    ItemEditForm,
)
from ..models import Item, Membership, Study
from ..selectors import (
    Role,
    clean_query,
    comparisons_summary,
    item_labels,
    item_list,
    item_roles,
    output_systems,
    paged,
    participant_list,
    quality_policy,
)
from ..services import (
    comparisons_generate,
    item_delete,
    item_update,
    participant_delete,
    participant_exclude,
    participant_revoke,
)


def _list_page(request: HttpRequest, template: str, partial: str, context: dict) -> HttpResponse:
    """Render a paged list: the whole page, or only its results for an htmx request (paging and
    searching swap the results and push the URL, whose plain query string works without
    JavaScript; a history restore asks for the whole page)."""
    htmx = getattr(request, "htmx", None)
    whole = not htmx or htmx.history_restore_request
    response = render(request, template if whole else partial, context)
    patch_vary_headers(response, ("HX-Request",))
    return response


@login_required
@require_GET
@study_view()
def items_upload(request: HttpRequest, study: Study) -> HttpResponse:
    """The study's items, paged and searchable (``?q=``, ``?page=``). A POST to this address
    uploads more: `imports.views.items_upload` takes it (config/urls.py routes it there first)."""
    query = clean_query(request.GET.get("q", ""))
    labels = item_labels(study=study)
    # A system or source filter (docs/systems.md): offered only when some item names one.
    chosen = {name: clean_query(request.GET.get(name, "")) for name in ("system", "source")}
    filters = {name: value for name, value in chosen.items() if value}
    return _list_page(request, "studies/items.html", "studies/_items_results.html",
                      _items_context(request, study, query=query, labels=labels, chosen=chosen,
                                     filters=filters))


def _items_context(request: HttpRequest, study: Study, *, query: str = "",
                   labels: dict | None = None, chosen: dict | None = None,
                   filters: dict | None = None,
                   comparisons_form: ComparisonsForm | None = None) -> dict:
    labels = labels if labels is not None else item_labels(study=study)
    filters = filters or {}
    page = paged(request.GET, item_list(study=study, query=query, **filters))
    output_systems(study=study, items=page)
    summary = comparisons_summary(study=study)
    return {
        "study": study, "page": page, "q": query, "labels": labels,
        "chosen": chosen or {"system": "", "source": ""},
        "filters": urlencode(filters),
        "n_system_scores": study.system_scores.count() if labels["n_systems"] else 0,
        "can_change": _items_changeable(study),
        "total": study.items.count(),
        "roles": item_roles(study=study),
        "policy": quality_policy(study=study),
        "comparisons": summary,
        "can_build": _comparisons_buildable(study) and bool(summary["questions"]),
        "comparisons_form": comparisons_form or ComparisonsForm(),
    }


def _comparisons_buildable(study: Study) -> bool:
    """An editor may build a design while the study is a draft, or before its first answer
    (`studies.services.comparisons_generate` says so again)."""
    if not Membership.allows(study.role, Role.EDITOR) or study.is_archived:
        return False
    return study.status == study.Status.DRAFT or not study.questions.filter(
        answers__isnull=False).exists()


@login_required
@require_POST
@study_view(need=Role.EDITOR)
def comparisons_build(request: HttpRequest, study: Study) -> HttpResponse:
    """Build the study's comparisons (the items page's form); when it has some, a confirmation
    first (they are replaced). Problems come back on the items page, at the form (400)."""
    form = ComparisonsForm(request.POST)
    if not form.is_valid():
        return render(request, "studies/items.html",
                      _items_context(request, study, comparisons_form=form), status=400)
    existing = study.items.exclude(outputs=[]).exclude(role=Item.Role.CHECK).count()
    if existing and not form.cleaned_data["replace"]:
        return render(request, "studies/comparisons_confirm.html", {
            "study": study, "existing": existing, "form": form,
            "arguments": form.arguments()})
    try:
        count = comparisons_generate(study=study, user=request.user, **form.arguments())
    except InputError as exc:
        for problem in exc.problems:
            field = problem.column if problem.column in form.fields else None
            form.add_error(field, problem.message)
        return render(request, "studies/items.html",
                      _items_context(request, study, comparisons_form=form), status=400)
    messages.success(request, f"Built {count} comparison{'s' if count != 1 else ''}"
                              + (f", replacing {existing}." if existing else "."))
    return redirect("studies:items_upload", slug=study.slug)


def _items_changeable(study) -> bool:
    return (Membership.allows(study.role, Role.EDITOR) and study.status == study.Status.DRAFT
            and not study.is_archived)


def _item(study: Study, item_pk: int) -> Item:
    item = study.items.filter(pk=item_pk).first()
    if item is None:
        raise Http404("No such item")
    item.study = study
    return item


@login_required
@require_GET
@study_view(need=Role.VIEWER)
def item_detail(request: HttpRequest, study: Study, item_pk: int) -> HttpResponse:
    item = _item(study, item_pk)
    # A comparison's outputs, in its order, each with its page and system.
    found = {i.external_id: i for i in study.items.filter(external_id__in=item.outputs)
             .only("pk", "external_id", "system")} if item.outputs else {}
    compared = [(name, found.get(name)) for name in item.outputs]
    return render(request, "studies/item.html", {
        "study": study, "item": item, "can_change": _items_changeable(study),
        "compared": compared,
        "policy": quality_policy(study=study),
        "n_assigned": item.assignments.count(),
        "n_answers": item.responses.filter(is_current=True).count(),
    })


@login_required
@require_http_methods(["GET", "POST"])
@study_view(need=Role.EDITOR)
def item_edit(request: HttpRequest, study: Study, item_pk: int) -> HttpResponse:
    item = _item(study, item_pk)
    form = ItemEditForm(request.POST or None, initial={
        "text": item.text, "text_a": item.text_a, "text_b": item.text_b,
        "is_control": item.is_control})
    keep = ("text_a", "text_b") if study.display == study.Display.PAIR \
        else () if item.annotation else ("text",)
    for name in ("text", "text_a", "text_b"):
        if name not in keep:
            del form.fields[name]
    error = None
    if request.method == "POST" and form.is_valid():
        try:
            changed = item_update(item=item, user=request.user, **form.cleaned_data)
        except InputError as exc:
            error = exc
        else:
            messages.success(request, f"Item {item.external_id}: "
                             + ("saved." if changed else "nothing changed."))
            return redirect("studies:item", slug=study.slug, item_pk=item.pk)
    return render(request, "studies/item_edit.html", {
        "study": study, "item": item, "form": form, "error": error,
        "can_change": _items_changeable(study),
    }, status=400 if error or form.errors else 200)


@login_required
@require_http_methods(["GET", "POST"])
@study_view(need=Role.EDITOR)
def item_delete_view(request: HttpRequest, study: Study, item_pk: int) -> HttpResponse:
    item = _item(study, item_pk)
    error = None
    if request.method == "POST":
        if request.POST.get("confirm") != "delete":
            error = "Confirm on this page."
        else:
            try:
                item_delete(item=item, user=request.user)
            except InputError as exc:
                error = exc.problems[0].message
            else:
                messages.success(request, f"Deleted item {item.external_id}.")
                return redirect("studies:items_upload", slug=study.slug)
    return render(request, "studies/item_delete.html", {
        "study": study, "item": item, "error": error, "can_change": _items_changeable(study),
    }, status=400 if error else 200)


@login_required
@require_GET
@study_view(need=Role.VIEWER)
def participants_list(request: HttpRequest, study: Study) -> HttpResponse:
    """The study's participants, paged and searchable: progress, source, last activity, flags,
    pseudonym; an editor also sees platform ids and links and can revoke or exclude."""
    editor = Membership.allows(study.role, Role.EDITOR)
    query = clean_query(request.GET.get("q", "")) if editor else ""
    page = paged(request.GET, participant_list(study=study, query=query))
    excluded = set(study.analysis.excluded_annotators)
    for participant in page:
        participant.excluded = participant.pseudonym in excluded
    return _list_page(request, "studies/participants.html", "studies/_participants_results.html", {
        "study": study, "page": page, "q": query, "editor": editor,
        "writable": editor and not study.is_archived,
        "total": study.participants.count(),
        "site": request.build_absolute_uri("/").rstrip("/"),
    })


PARTICIPANT_ACTIONS = {
    "revoke": ("Revoke this link",
               "The link stops working: its annotator sees a polite page saying the link was "
               "withdrawn, and no further answer is accepted. The answers given so far are kept "
               "(exclude them from the analysis to leave them out). This cannot be undone."),
    "exclude": ("Exclude from the analysis",
                "Every later analysis run leaves this annotator's answers out (their pseudonym is "
                "added to the study's analysis settings, excluded_annotators). Nothing is deleted; "
                "you can include them again."),
    "include": ("Include in the analysis again",
                "Later analysis runs use this annotator's answers again."),
    "delete": ("Delete this participant and every answer",
               "For a withdrawal of consent. Their link, every answer they gave and their "
               "progress are deleted for good, together with the study's analysis runs and "
               "export files made since their first answer (run the analysis again afterwards). "
               "The history records only that it happened, with their pseudonym and how many "
               "answers were deleted. Nobody else is renumbered: their pseudonym stays unused. "
               "This cannot be undone."),
}


@login_required
@require_http_methods(["GET", "POST"])
@study_view(need=Role.EDITOR)
def participant_action(request: HttpRequest, study: Study, pk: int, action: str) -> HttpResponse:
    """GET: the confirmation page of revoking a link or excluding/including an annotator;
    POST (from that page, ``confirm=<action>``): do it."""
    participant = study.participants.filter(pk=pk).first()
    if participant is None:
        raise Http404("No such participant")
    participant.study = study
    pseudonym = participant.pseudonym
    error = ""
    if action in ("exclude", "include") and not pseudonym:
        error = "This participant has no answer, so there is nothing to exclude."
    elif request.method == "POST":
        if request.POST.get("confirm") != action:
            error = "Confirm on this page."
        else:
            try:
                if action == "revoke":
                    participant_revoke(participant=participant, user=request.user)
                    messages.success(request, "The link was revoked.")
                elif action == "delete":
                    counts = participant_delete(participant=participant, user=request.user)
                    messages.success(request, f"The participant and their {counts['answers']} "
                                     "answers were deleted.")
                else:
                    participant_exclude(study=study, pseudonym=pseudonym,
                                        excluded=action == "exclude", user=request.user)
                    messages.success(request, f"{pseudonym} is "
                                     f"{'excluded from' if action == 'exclude' else 'included in'}"
                                     " the analysis from the next run on.")
            except InputError as exc:
                error = exc.problems[0].message
            else:
                return redirect("studies:participants", slug=study.slug)
    title, text = PARTICIPANT_ACTIONS[action]
    return render(request, "studies/participant_confirm.html", {
        "study": study, "participant": participant, "pseudonym": pseudonym, "action": action,
        "title": title, "text": text, "error": error,
    }, status=400 if error else 200)


# --- sharing (owners) ---------------------------------------------------------------------------
