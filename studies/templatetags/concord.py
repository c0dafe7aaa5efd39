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
