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


@register.filter
def event_detail(detail: dict[str, object]) -> str:
    """A history entry's detail as words: "fields: questions, title; count: 3" (a list is
    joined, never shown as Python writes it)."""
    parts = []
    for key, value in (detail or {}).items():
        if isinstance(value, (list, tuple)):
            value = ", ".join(str(v) for v in value) or "—"
        parts.append(f"{str(key).replace('_', ' ')}: {value}")
    return "; ".join(parts)
