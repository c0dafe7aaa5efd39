"""Number formatting for the results dashboard: fixed decimals, an em dash for null."""

from __future__ import annotations

import functools
import re

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
def scale_value(value) -> str:
    """A value of a rating scale as the annotator chose it: 5 for a whole number (not 5.00),
    else up to two decimals (0.5, 2.25); null as an em dash."""
    if value is None or value == "":
        return DASH
    number = float(value)
    if number.is_integer():
        return str(int(number))
    return f"{number:.2f}".rstrip("0").rstrip(".")


@register.filter
def signed_pct(value) -> str:
    """A relative change as a signed percentage (+12.5 %); null as an em dash."""
    if value is None:
        return DASH
    return f"{100 * float(value):+.1f} %"


@register.filter
def seconds(value) -> str:
    if value is None or value == "":  # "": a missing value (a study without a scale question)
        return DASH
    value = float(value)
    return f"{value:.1f} s" if value < 120 else f"{value / 60:.1f} min"


@register.filter
def grouped(value) -> str:
    """A whole number with its thousands apart, as the docs write them (2 000)."""
    try:
        return f"{int(value):,}".replace(",", "\u202f")
    except (TypeError, ValueError):
        return DASH


@register.filter
def get(mapping, key):
    return mapping.get(key) if hasattr(mapping, "get") else None


@register.filter
def rules_label(rules) -> str:
    """The one name of a set of rules (`analysis.dashboard.rule_set_name`)."""
    from analysis.dashboard import rule_set_name

    return rule_set_name(rules or [])


@register.simple_tag
def cite(key: str, detail: str = "") -> str:
    """Link an author–year citation ("Borovikova et al. 2022") to its full entry on the
    references page; ``detail`` (", Algorithm 1") follows the link."""
    from django.urls import reverse
    from django.utils.html import format_html

    from analysis.methods import reference_anchor

    url = f"{reverse('analysis:references')}#{reference_anchor(key)}"
    return format_html('<a class="cite" href="{}">{}</a>{}', url, key, detail)


@register.simple_tag(takes_context=True)
def method_link(context, name: str, text: str = "") -> str:
    """Link to the page of method ``name`` (docs/statistics/<name>.md, served by the app): the
    page of the run shown (with its settings) when the page shows one, else the general one."""
    from django.urls import reverse
    from django.utils.html import format_html

    from analysis.methods import METHODS, title_of

    if name not in METHODS:
        raise template.TemplateSyntaxError(f"no method page {name!r}")
    study, run = context.get("study"), context.get("finished")
    if study is not None and run is not None:
        url = reverse("analysis:run_method",
                      kwargs={"slug": study.slug, "run_id": run.pk, "name": name})
    else:
        url = reverse("analysis:method", kwargs={"name": name})
    return format_html('<a class="method" href="{}">{}</a>', url, text or title_of(name))


@register.simple_tag
def note(notes, reason) -> str:
    """Mark a cell with the number of its reason (`analysis.dashboard.reason_notes`); the
    sentence itself is stated once, under the table (analysis/_notes.html)."""
    from django.utils.html import format_html

    number = notes.get(reason) if reason and hasattr(notes, "get") else None
    if number is None:
        return ""
    return format_html('<sup class="note-mark" title="{}">{}</sup>', reason, number)


@register.filter
def cited(text: str) -> str:
    """Escape ``text`` and link each author–year citation of a work docs/references.md lists
    ("Solomon et al. 2021" or "Solomon et al. (2021)") to its entry, as `cite` does."""
    from django.urls import reverse
    from django.utils.html import escape
    from django.utils.safestring import mark_safe

    from analysis.methods import reference_keys

    html = str(escape(text or ""))
    url = reverse("analysis:references")
    for pattern, anchor in _citations(tuple(reference_keys())):
        html = pattern.sub(lambda m, anchor=anchor: (
            f'<a class="cite" href="{url}#{anchor}">{m[0]}</a>'), html)
    return mark_safe(html)  # noqa: S308 - escaped above; only our links added


@functools.lru_cache(maxsize=4)
def _citations(keys: tuple[str, ...]) -> tuple[tuple[re.Pattern[str], str], ...]:
    """Each work's citation pattern and anchor, compiled once per list of works (every chart's
    description is read through `cited`)."""
    from django.utils.html import escape

    from analysis.methods import reference_anchor

    out = []
    for key in keys:
        authors, year = key.rsplit(" ", 1)
        pattern = re.compile(rf"(?<![\w>]){re.escape(str(escape(authors)))} (\()?{year}\b(?(1)\))")
        out.append((pattern, reference_anchor(key)))
    return tuple(out)
