"""Number formatting for the results dashboard: fixed decimals, an em dash for null."""

from __future__ import annotations

from django import template

register = template.Library()

DASH = "—"


@register.filter
def stat(value, digits: int = 3) -> str:
    """A statistic with ``digits`` decimals (-0.000 shown as 0.000); null as an em dash.

    ASCII minus signs, so that numbers copied from the page paste as numbers into a spreadsheet.
    """
    if value is None or value == "":
        return DASH
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    text = f"{float(value):.{int(digits)}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


@register.filter
def signed_pct(value) -> str:
    """A relative change as a signed percentage (+12.5 %); null as an em dash."""
    if value is None:
        return DASH
    return f"{100 * float(value):+.1f} %"


@register.filter
def seconds(value) -> str:
    if value is None:
        return DASH
    value = float(value)
    return f"{value:.1f} s" if value < 120 else f"{value / 60:.1f} min"


@register.filter
def get(mapping, key):
    return mapping.get(key) if hasattr(mapping, "get") else None


@register.filter
def rules_label(rules) -> str:
    return " + ".join(rules) if rules else "baseline (no filter)"
