"""The results dashboard's template context, built from what `analysis.selectors.dashboard_data`
read: no query here, so the page's query count is the selector's (pinned in
tests/analysis/test_dashboard.py). The view validates the request, calls the two and renders.

The context holds the run control (the recent runs, the active one and its state, the rerun
form), the participant counts and, once a run has finished, the document as it reads for the
chosen question and the annotators shown, every table of `analysis.dashboard`, the notes under
them, and the charts by section.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core.results import question_keys, question_view
from core.settings import LEVELS
from jobs.selectors import job_status

from . import dashboard as tables
from .charts import Chart, build_charts
from .dashboard_comparisons import comparisons_section
from .dashboard_judges import is_with_judges, judges_section
from .dashboard_systems import systems_section
from .forms import RunForm
from .methods import METHODS

if TYPE_CHECKING:
    from django.http import QueryDict

    from studies.models import Study

    from .selectors import DashboardData


def selection(document: dict[str, Any], *, question: str | None,
              scale: str | None) -> tuple[str | None, dict[str, Any], str]:
    """Return the question and scale chosen and the document as it reads for that question;
    an unknown choice falls back to the first rather than failing."""
    keys = question_keys(document)
    question = question if question in keys else (keys[0] if keys else None)
    view = question_view(document, question)
    names = tables.scale_names(view)
    scale = scale if scale in names else (names[0] if names else "raw")
    return question, view, scale


def dashboard_context(*, study: Study, data: DashboardData, question: str | None,
                      scale: str | None, everyone: bool, query: QueryDict) -> dict[str, Any]:
    """Return the dashboard template's context.

    ``question`` and ``scale``: as asked (``?question=&scale=``, see `selection`); ``everyone``:
    every annotator asked for (``?annotators=all``) rather than the first SHOWN_ANNOTATORS;
    ``query``: the page's query string, which the "show all annotators" link extends.
    """
    finished = data.finished
    document = finished.results if finished else None
    active = next((r for r in data.runs if r.is_active), None)
    # A rerun starts from the settings of the run shown, else from the study's.
    form = RunForm(initial=RunForm.initial_from(finished.settings if finished
                                                else study.analysis_settings))
    context: dict[str, Any] = {
        "study": study, "runs": data.runs, "finished": finished, "active": active,
        "active_state": job_status(job=active) if active else None, "form": form,
        "people": data.people, "document": document}
    if document is not None:
        context.update(_results(document, question=question, scale=scale, everyone=everyone,
                                query=query))
    return context


def _results(document: dict[str, Any], *, question: str | None, scale: str | None, everyone: bool,
             query: QueryDict) -> dict[str, Any]:
    """The context of a finished run's document: its selection, tables, notes and charts."""
    whole = document
    question, document, scale = selection(document, question=question, scale=scale)
    context: dict[str, Any] = {}
    shown = _annotators_shown(document, everyone=everyone, query=query)
    if shown is not None:
        context["annotators_shown"], document = shown
    context.update({
        "document": document,
        "question": question,
        "questions": tables.question_choices(document),
        "scale": scale,
        "scales": tables.scale_names(document),
        "levels": LEVELS,
        **_tables(document, scale=scale),
        "charts": _charts_by_section(build_charts(document, question=question, scale=scale,
                                                  level=document["settings"].get("level"),
                                                  viewed=True)),
        "settings_used": document["settings"],
        "systems": systems_section(document, scale=scale),
        # The Systems section's method page is docs/statistics/systems.md: linked when served.
        "systems_method": "systems" in METHODS,
        # Every comparative question's section, whichever question the rest of the page shows.
        "comparative": comparisons_section(whole),
        # Every judge × question, whichever question the rest of the page shows; the method
        # page is docs/statistics/judges.md: linked when served.
        "judged": judges_section(whole),
        "judges_method": "judges" in METHODS,
        # The view with judges (judges analysed as annotators): said above every section.
        "with_judges": is_with_judges(whole),
    })
    context["notes"] = tables.dashboard_notes(
        alpha=context["alpha_tables"], duplicates=context["duplicates"], flags=context["flags"],
        ranking=context["ranking"], correlations=context["correlations"],
        quality_correlations=context["quality_correlations"],
        styles=context["style_correlations"], comparisons=context["comparisons"],
        noise=context["noise"])
    return context


def _annotators_shown(document: dict[str, Any], *, everyone: bool,
                      query: QueryDict) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """A crowd's thousands of annotators: their tables and charts show SHOWN_ANNOTATORS, the
    flagged first, unless the page is asked for all of them. Return what the page says of the
    annotators shown and the document for them only, or None when every one is shown."""
    everyone = everyone or len(document.get("annotators", [])) <= tables.SHOWN_ANNOTATORS
    if everyone:
        return None
    ordered = tables.flagged_annotators(document)  # read once: the pass over every record
    shown = tables.shown_annotators(document, limit=tables.SHOWN_ANNOTATORS, flagged=ordered)
    if shown is None:
        return None
    flagged = set(ordered)
    params = query.copy()
    params["annotators"] = "all"
    named = [a for a in shown if a in flagged]
    summary = {
        "shown": len(shown), "total": len(document.get("annotators", [])),
        "flagged": len(named), "flagged_names": named if len(named) <= 10 else [],
        "others": len(shown) - len(named), "query": params.urlencode()}
    return summary, tables.with_annotators(document, shown)


def _tables(document: dict[str, Any], *, scale: str) -> dict[str, Any]:
    """Every table of the page, for the document as it reads for one question and scale."""
    pooled, timing = tables.timing_rows(document)
    rules, flags = tables.flag_rows(document)
    features, weights = tables.weight_table(document, scale=scale)
    return {
        "alpha_tables": tables.alpha_tables(document),
        "trust": tables.trust_table(document, scale=scale, items="all"),
        "trust_simple": tables.trust_table(document, scale=scale, items="simple"),
        "duplicates": tables.duplicates_rows(document, scale=scale),
        "timing_pooled": pooled,
        "timing": timing,
        "rules": rules,
        "rule_labels": [tables.RULE_LABELS.get(r, r) for r in rules],
        "flags": flags,
        "correlations": tables.attach_intervals(tables.correlation_table(document), document),
        "ranking": tables.rank_table(document, scale=scale),
        "quality_correlations": tables.quality_correlation_table(document),
        "style_correlations": tables.style_correlation_rows(document),
        "comparisons": tables.comparison_rows(document),
        "competence_labels": list(tables.COMPETENCE_LABELS.values()),
        "gaps": tables.gap_rows(document, scale=scale),
        "largest_gaps": tables.largest_gaps(document, scale=scale),
        "weight_features": features,
        "weights": weights,
        "noise": tables.noise_rows(document),
    }


def _charts_by_section(charts: list[Chart]) -> dict[str, list[Chart]]:
    by_section: dict[str, list[Chart]] = {}
    for chart in charts:
        # the correlation chart belongs with its table, in a section of its own on the page
        section = "correlations" if chart.name == "correlations" else chart.section
        by_section.setdefault(section, []).append(chart)
    return by_section
