"""Template helpers of the item page: each question's answer so far, its scale's layout, and
rubrics rendered once per process.

The page shows every question of a study under one Confirm. On a revisit (going back to an
answered item) the current answers come from `annotation.selectors.current_answers`
(`{key: {value, missing, comment}}`, values as floats); the radios compare them with the
scale's option keys ("3", "0.5"), so `answer_for` turns them into the same strings.
"""

from __future__ import annotations

from functools import lru_cache

from django import template
from django.utils.safestring import SafeString, mark_safe

from studies.models import Question
from studies.sanitize import render_markdown

register = template.Library()

# A label longer than this no longer fits under its number when a 0–7 scale stands on one
# row of the answer panel (about 27rem wide): such scales show their end labels under the row
# and the chosen option's label below it; each radio keeps its full label either way.
SHORT_LABEL = 30


@register.simple_tag
def answer_for(current: dict | None, key: str) -> dict:
    """Return a question's answer so far as the page shows it: value key, can't judge, comment."""
    answer = (current or {}).get(key) or {}
    value = answer.get("value")
    return {
        "value": "" if value is None else _option_key(value),
        "cant_judge": answer.get("missing") == Question.Missing.CANT_JUDGE,
        "comment": answer.get("comment") or "",
    }


@register.filter
def labels_fit(question: Question) -> bool:
    """Tell whether every label of the question's scale is short enough to stand under its number."""
    return all(len(label) <= SHORT_LABEL for _, label in question.options())


@register.filter
def any_rubric(questions) -> bool:
    """Tell whether any of the questions has a rubric (the page then shows its rating guide)."""
    return any(question.rubric for question in questions)


@register.filter
def rubric_html(text: str) -> SafeString:
    """Render a rubric's Markdown, sanitised; cached, because every item page shows it again."""
    return _rubric_html(text or "")


@lru_cache(maxsize=256)
def _rubric_html(text: str) -> SafeString:
    return mark_safe(render_markdown(text))  # noqa: S308 - sanitised by nh3


def _option_key(value: float) -> str:
    number = float(value)
    return str(int(number)) if number.is_integer() else repr(number)
