"""Reads of the studies app; every study read is scoped by the reader's role in it."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Count, Max, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce, Substr
from django.http import Http404

from .models import Assignment, Item, Membership, Participant, Study

Role = Membership.Role


def _with_role(user: AbstractBaseUser | AnonymousUser) -> QuerySet[Study]:
    if not user.is_authenticated:
        return Study.objects.none()
    role = Membership.objects.filter(study=OuterRef("pk"), user=user).values("role")[:1]
    return Study.objects.filter(memberships__user=user).annotate(role=Subquery(role))


def study_list(*, user: AbstractBaseUser | AnonymousUser) -> QuerySet[Study]:
    """The studies the user has a role in, each with ``role`` (the user's) and its questions."""
    return _with_role(user).prefetch_related("questions")


def study_get(*, user: AbstractBaseUser | AnonymousUser, slug: str,
              need: str = Role.VIEWER) -> Study:
    """Return the study if the user's role in it is at least ``need``.

    No role at all is a 404, whether the study exists for someone else or not (other studies
    behave as if they did not exist); a role below ``need`` is a 403 (they can see the study,
    just not do this). The study carries ``role``, the user's. One query.
    """
    study = _with_role(user).filter(slug=slug).first()
    if study is None:
        raise Http404("No such study")
    if not Membership.allows(study.role, need):
        raise PermissionDenied(f"Your role in this study ({study.role}) does not allow this.")
    return study


def study_members(*, study: Study) -> QuerySet[Membership]:
    return study.memberships.select_related("user").order_by("user__username")


def participant_progress(*, study: Study) -> QuerySet[Participant]:
    return study.participants.order_by("id")


class StudyScopedMixin:
    """For API views under ``studies/<study_slug>/``: the URL's study, by the caller's role.

    Shared by every app's API (the scoping rule of `study_get`, in one place): reads need a
    viewer, writes an editor (a view may set ``write_role``); anyone without a role gets 404.
    """

    kwargs: dict
    request: Any
    write_role: str = Role.EDITOR

    def schema_only(self) -> bool:
        return getattr(self, "swagger_fake_view", False)

    def study(self) -> Study:
        if not hasattr(self, "_study"):
            need = Role.VIEWER if self.request.method in ("GET", "HEAD", "OPTIONS") \
                else self.write_role
            self._study = study_get(user=self.request.user, slug=self.kwargs["study_slug"],
                                    need=need)
        return self._study



PAGE_SIZE = 50
MAX_QUERY = 200


def clean_query(raw: str) -> str:
    """A search box's text as searched: at most MAX_QUERY characters, no NUL (PostgreSQL's
    text cannot hold one), no surrounding spaces."""
    return raw.replace("\x00", "")[:MAX_QUERY].strip()


def item_filter(items: QuerySet[Item], *, system: str | None = None,
                source: str | None = None) -> QuerySet[Item]:
    """Keep the items of one system and/or one source (exact match; "" keeps the items that name
    none; None does not filter)."""
    if system is not None:
        items = items.filter(system=clean_query(system))
    if source is not None:
        items = items.filter(source=clean_query(source))
    return items


LABELS_LISTED = 500  # the systems and sources a page lists (a filter box takes any other)


def item_labels(*, study: Study, limit: int = LABELS_LISTED) -> dict[str, Any]:
    """The systems and the sources the study's items name, each sorted and at most ``limit``
    of them (``systems``, ``sources``), and how many there are (``n_systems``, ``n_sources``);
    empty lists and 0 for a study without them. Three queries over the (study, system, source)
    index."""
    def distinct(name: str) -> list[str]:
        return list(study.items.exclude(**{name: ""}).order_by(name)
                    .values_list(name, flat=True).distinct()[:limit])
    counts = item_label_counts(study=study)
    return {"systems": distinct("system") if counts["systems"] else [],
            "sources": distinct("source") if counts["sources"] else [],
            "n_systems": counts["systems"], "n_sources": counts["sources"]}


def item_label_counts(*, study: Study) -> dict[str, int]:
    """How many systems and sources the study's items name: ``{"systems": n, "sources": n}``.
    One query."""
    counts = study.items.aggregate(
        systems=Count("system", distinct=True, filter=~Q(system="")),
        sources=Count("source", distinct=True, filter=~Q(source="")))
    return {"systems": counts["systems"], "sources": counts["sources"]}


def labels_phrase(counts: dict[str, int]) -> str:
    """" (4 systems over 30 sources)" for an import's message; "" when the items name none."""
    parts = [f"{counts[k]} {k[:-1] if counts[k] == 1 else k}" for k in ("systems", "sources")
             if counts[k]]
    return f" ({' over '.join(parts)})" if parts else ""


def system_scores(*, study: Study) -> dict[str, Any]:
    """The study's system-level metric scores as a table: ``{"metrics": [...], "rows":
    [{"system": s, "values": [value or None per metric]}, ...]}``, metrics and systems sorted.
    One query."""
    scores: dict[str, dict[str, float]] = {}
    metrics: set[str] = set()
    for system, metric, value in study.system_scores.order_by().values_list(
            "system", "metric", "value"):
        scores.setdefault(system, {})[metric] = value
        metrics.add(metric)
    ordered = sorted(metrics)
    return {"metrics": ordered,
            "rows": [{"system": system, "values": [scores[system].get(m) for m in ordered]}
                     for system in sorted(scores)]}


def item_list(*, study: Study, query: str = "", system: str | None = None,
              source: str | None = None) -> QuerySet[Item]:
    """The study's items in import order, each with a short ``preview`` of its text (pairs:
    ``preview_a``, ``preview_b``) and its
    ``n_assigned`` (presentations) and ``n_answers`` (current answers to them); ``query``
    matches the id or any text, case-insensitively; ``system`` and ``source`` keep one system's
    or one source's items (`item_filter`). The full texts are not loaded.

    The counts are correlated subqueries, evaluated for the rows of the page only; answers are
    read through the reverse relation (`Item.responses`), so this app imports no other app.
    """
    items = item_filter(study.items.order_by("position"), system=system, source=source)
    query = clean_query(query)
    if query:
        items = items.filter(Q(external_id__icontains=query) | Q(text__icontains=query)
                             | Q(text_a__icontains=query) | Q(text_b__icontains=query))
    assigned = (Assignment.objects.filter(item=OuterRef("pk")).order_by()
                .values("item").annotate(n=Count("pk")).values("n"))
    answers = (Item.objects.filter(pk=OuterRef("pk")).order_by()
               .annotate(n=Count("responses", filter=Q(responses__is_current=True)))
               .values("n"))
    return (items.only("id", "external_id", "position", "is_control", "role", "gold", "tolerance",
                       "check_at", "system", "source", "outputs")
            .annotate(preview=Substr("text", 1, 160), preview_a=Substr("text_a", 1, 80),
                      preview_b=Substr("text_b", 1, 80),
                      n_assigned=Coalesce(Subquery(assigned), 0),
                      n_answers=Coalesce(Subquery(answers), 0)))


def paged(request_get: Any, queryset: QuerySet) -> Any:
    """Return the requested page (``?page=``) of a queryset; a bad page number is the nearest."""
    return Paginator(queryset, PAGE_SIZE).get_page(request_get.get("page"))


def participant_list(*, study: Study, query: str = "") -> QuerySet[Participant]:
    """The study's participants in order of creation, each with ``last_activity`` (their last
    answer's time, else consent, else creation); ``query`` matches the platform id or label."""
    participants = study.participants.order_by("id")
    query = clean_query(query)
    if query:
        participants = participants.filter(Q(external_id__icontains=query)
                                           | Q(label__icontains=query))
    last = (Participant.objects.filter(pk=OuterRef("pk")).order_by()
            .annotate(last=Max("responses__received_at")).values("last"))
    # live_quality: the flags the analysis app's periodic task stores (analysis.live), joined
    # here so the page reads them in the same query.
    return participants.annotate(last_answer=Subquery(last)).select_related("live_quality")


def pseudonyms(*, study: Study) -> dict[int, str]:
    """{participant id: "A1", "A2", …}: the stored pseudonyms, which the results, exports and
    participants page all use, in pseudonym order. Participants without an answer have none (and
    a deleted one leaves a gap). One query."""
    return {pk: f"A{n}" for pk, n in Participant.objects.filter(
        study_id=study.pk, pseudonym_number__isnull=False)
        .order_by("pseudonym_number").values_list("pk", "pseudonym_number")}


def _definition_scale(question: Any, language: str) -> tuple[dict[str, Any] | str, str]:
    """A question's scale as a definition file writes it, and its rubric when it is not the
    scale's: the preset's name when the question still is that preset, else the custom table."""
    from .presets import preset_scale

    custom = {"values": list(question.values), "labels": dict(question.labels),
              "reductions": {r["name"]: dict(r["map"]) for r in question.reductions}}
    if question.preset:
        try:
            preset = preset_scale(question.preset, language)
        except ValueError:
            preset = None
        if preset is not None and all(preset[k] == getattr(question, k)
                                      for k in ("values", "labels", "reductions")):
            rubric = "" if question.rubric == preset["rubric"] else question.rubric
            return question.preset, rubric
    return {**custom, "rubric": question.rubric}, ""


def study_definition(*, study: Study) -> dict[str, Any]:
    """The study's definition, as a definition file holds it (`studies.definitions`):
    `create_study --definition` reads it back to an equal study. Its items, participants and
    answers are not part of it. One query (the questions)."""
    questions = []
    for question in study.question_list:
        if question.is_comparative:
            entry = {"key": question.key, "prompt": question.prompt, "kind": question.kind,
                     "options": dict(question.comparison), "required": question.required,
                     "comment": question.allow_comment, "cant_judge": question.allow_cant_judge}
            if question.rubric:
                entry["rubric"] = question.rubric
            questions.append(entry)
            continue
        scale, rubric = _definition_scale(question, study.language)
        entry: dict[str, Any] = {"key": question.key, "prompt": question.prompt, "scale": scale,
                                 "required": question.required,
                                 "comment": question.allow_comment,
                                 "cant_judge": question.allow_cant_judge}
        if rubric:
            entry["rubric"] = rubric
        questions.append(entry)
    return {
        "slug": study.slug,
        "title": study.title,
        "language": study.language,
        "display": study.display,
        "questions": questions,
        "consent": study.consent_text,
        "instructions": study.instructions,
        "completion_url": study.completion_url,
        "completion_text": study.completion_text,
        "show_gold": study.show_gold,
        "design": {"items_per_participant": study.items_per_participant,
                   "annotators_per_item": study.annotators_per_item,
                   "duplicates": study.duplicates_per_participant,
                   "duplicate_min_gap": study.duplicate_min_gap,
                   "seed": study.seed, "source_order": study.source_order},
        "analysis": _analysis(study.analysis_settings),
        "quality": _quality(study),
    }


def item_roles(*, study: Study) -> dict[str, int]:
    """Count the study's items by role (main, screening, check). One query."""
    counts = dict.fromkeys(Item.Role.values, 0)
    counts.update(study.items.order_by().values_list("role").annotate(n=Count("pk")))
    return counts


def with_item_roles(studies: QuerySet[Study]) -> QuerySet[Study]:
    """Annotate each study with its item count per role (``n_role_main``, …), in the same query."""
    counts = {f"n_role_{role}": Coalesce(Subquery(
        Item.objects.filter(study=OuterRef("pk"), role=role).order_by().values("study")
        .annotate(n=Count("pk")).values("n")), 0) for role in Item.Role.values}
    return studies.annotate(**counts)


def quality_policy(*, study: Study) -> dict[str, Any]:
    """The study's screening pass mark and attention-check policy (the definition's `quality`)."""
    return _quality(study)


def _quality(study: Study) -> dict[str, Any]:
    """The screening pass mark and attention-check policy, as the definition's `quality`."""
    out: dict[str, Any] = ({"screening_pass_count": study.screening_pass_count}
                           if study.screening_pass_count is not None
                           else {"screening_pass_share": study.screening_pass_share})
    if study.screened_out_url:
        out["screened_out_url"] = study.screened_out_url
    return out | {"check_warn_after": study.check_warn_after,
                  "check_stop_after": study.check_stop_after}


def _analysis(stored: Any) -> dict[str, Any]:
    """The study's analysis settings with every key written out (as stored when invalid)."""
    from core.settings import AnalysisSettings, SettingsError

    try:
        return AnalysisSettings.from_mapping(stored or {}).to_dict()
    except SettingsError:
        return dict(stored or {})


def comparisons_summary(*, study: Study) -> dict[str, Any]:
    """The study's comparisons at a glance (docs/comparisons.md): how many, by design
    (``{"pairs": 12}``), the seed of the last design, the outputs they compare, and whether it
    asks a comparative question. Two queries."""
    comparative = [q.key for q in study.question_list if q.is_comparative]
    count = 0
    designs: dict[str, int] = {}
    compared: set[str] = set()
    seeds: set[Any] = set()
    for outputs, meta in study.items.exclude(outputs=[]).values_list("outputs", "meta"):
        count += 1
        design = (meta or {}).get("design", "file")
        designs[design] = designs.get(design, 0) + 1
        if "seed" in (meta or {}):
            seeds.add(meta["seed"])
        compared.update(outputs)
    return {"questions": comparative, "count": count, "designs": designs,
            "seeds": sorted(seeds, key=str), "outputs": len(compared)}


def output_systems(*, study: Study, items: Any) -> None:
    """Give each comparison of ``items`` (a page) ``compared``: its outputs as (id, system) in
    its canonical order. One query."""
    page = [item for item in items if item.outputs]
    names = {name for item in page for name in item.outputs}
    systems = dict(study.items.filter(external_id__in=names)
                   .values_list("external_id", "system")) if names else {}
    for item in page:
        item.compared = [(name, systems.get(name, "")) for name in item.outputs]
