from collections.abc import Callable
from typing import Any

from django import template
from django.utils.safestring import mark_safe

from studies.sanitize import clean_item_html, render_markdown

register = template.Library()


@register.filter
def item_html(text: str) -> str:
    """Show untrusted item text with inline formatting only."""
    return mark_safe(clean_item_html(text or ""))  # noqa: S308 - sanitised by nh3


@register.filter
def markdown(text: str) -> str:
    """Render untrusted Markdown, sanitised."""
    return mark_safe(render_markdown(text or ""))  # noqa: S308 - sanitised by nh3


@register.filter
def percent(part: int, whole: int) -> int:
    return round(100 * part / whole) if whole else 0


@register.filter
def moment(value: object) -> str:
    """Show a time as people read it ("23 Nov 2026, 20:21 UTC", in the page's language), with
    the exact ISO 8601 value in the element's `datetime` and `title`.

    Takes a datetime or an ISO string (a results document's `generated_at`); anything else is
    shown as it is.
    """
    from datetime import datetime

    from django.utils import formats, timezone
    from django.utils.html import format_html

    moment_ = value
    if isinstance(value, str):
        try:
            moment_ = datetime.fromisoformat(value)
        except ValueError:
            return value
    if not isinstance(moment_, datetime):
        return "" if value is None else str(value)
    if timezone.is_naive(moment_):
        moment_ = timezone.make_aware(moment_, timezone.get_default_timezone())
    local = timezone.localtime(moment_)
    exact = moment_.isoformat()
    shown = f"{formats.date_format(local, 'j M Y')}, {local:%H:%M} {local.tzname() or ''}".strip()
    return format_html('<time datetime="{}" title="{}">{}</time>', exact, exact, shown)


@register.filter
def known_answers(item: object) -> str:
    """Show a screening or check item's known answers with their tolerances: "score 2 (±1)"."""
    gold = getattr(item, "gold", None) or {}
    tolerance = getattr(item, "tolerance", None) or {}

    def number(value: object) -> str:
        try:
            return f"{float(value):g}"  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return str(value)

    parts = []
    for key, value in gold.items():
        tol = tolerance.get(key, 0)
        parts.append(f"{key} {number(value)}" + (f" (±{number(tol)})" if tol else " (exact)"))
    return "; ".join(parts)


def _joined(value: object) -> str:
    """A list as words ("questions, title"), anything else as it reads."""
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value) or "—"
    return str(value)


def _counted(n: object, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


# How each action's detail reads (studies.services.lifecycle.study_event writes it); a key no
# sentence names is listed after it as "key: value", so nothing recorded is ever hidden.
_EVENT_WORDS: dict[str, tuple[tuple[str, ...], Callable[[dict[str, Any]], str]]] = {
    "settings": (("fields",), lambda d: f"changed: {_joined(d['fields'])}"),
    "item_edit": (("item", "fields"),
                  lambda d: f"item {d['item']}, changed: {_joined(d['fields'])}"),
    "item_delete": (("item",), lambda d: f"item {d['item']}"),
    "items": (("count", "files"),
              lambda d: f"{_counted(d['count'], 'item', 'items')} from {_joined(d['files'])}"),
    "comparisons": (("count", "design", "seed"),
                    lambda d: f"{_counted(d['count'], 'comparison', 'comparisons')} "
                              f"({'best–worst tuples' if d['design'] == 'tuples' else 'pairs'}, "
                              f"seed {d['seed']})"),
    "invite": (("count",), lambda d: _counted(d["count"], "new link", "new links")),
    "controls": (("count",), lambda d: _counted(d["count"], "pair", "pairs")),
    "member_add": (("researcher", "role"), lambda d: f"{d['researcher']} as {d['role']}"),
    "member_remove": (("researcher", "role"),
                      lambda d: f"{d['researcher']} (was {d['role']})"),
    "member_change": (("researcher", "from", "to"),
                      lambda d: f"{d['researcher']}: {d['from']} → {d['to']}"),
    "exclude": (("pseudonym",), lambda d: f"annotator {d['pseudonym']}"),
    "include": (("pseudonym",), lambda d: f"annotator {d['pseudonym']}"),
    "system_scores": (("rows", "metrics"),
                      lambda d: f"{_counted(d['rows'], 'score', 'scores')} of "
                                f"{_joined(d['metrics'])}"),
    "system_scores_delete": (("rows", "metric"),
                             lambda d: f"{_counted(d['rows'], 'score', 'scores')} of "
                                       f"{d['metric']}"),
    "delete": (("items", "participants"),
               lambda d: f"{_counted(d['items'], 'item', 'items')}, "
                         f"{_counted(d['participants'], 'participant', 'participants')}"),
}
_TRANSITION: tuple[tuple[str, ...], Callable[[dict[str, Any]], str]] = (
    ("from", "to"), lambda d: f"{d['from']} → {d['to']}")


@register.filter
def event_detail(event: Any) -> str:
    """A history entry's detail in words: "changed: questions, title", "12 items from
    items.csv", "draft → open" (a list is joined, never shown as Python writes it).

    Takes the entry (its action picks the sentence) or, for older callers, its detail alone."""
    action, detail = ((getattr(event, "action", ""), event.detail)
                      if hasattr(event, "detail") else ("", event))
    detail = dict(detail or {})
    rule = _EVENT_WORDS.get(action)
    if rule is None and {"from", "to"} <= detail.keys():
        rule = _TRANSITION
    parts = []
    if rule is not None and all(k in detail for k in rule[0]):
        keys, words = rule
        parts.append(words(detail))
        for key in keys:
            detail.pop(key)
    for key, value in detail.items():
        parts.append(f"{str(key).replace('_', ' ')}: {_joined(value)}")
    return "; ".join(parts)
