"""Template helpers of the item page: each question's answer so far, its scale's layout, and
rubrics rendered once per process.

The page shows every question of a study under one Confirm. On a revisit (going back to an
answered item) the current answers come from `annotation.selectors.current_answers`
(`{key: {value, missing, comment}}`, values as floats); the radios compare them with the
scale's option keys ("3", "0.5"), so `answer_for` turns them into the same strings.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import Any

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
def answer_for(current: dict[str, dict[str, Any]] | None, key: str) -> dict[str, Any]:
    """Return a question's answer so far as the page shows it: value key, can't judge, comment."""
    answer = (current or {}).get(key) or {}
    value = answer.get("value")
    return {
        "value": "" if value is None else _option_key(value),
        "cant_judge": answer.get("missing") == Question.Missing.CANT_JUDGE,
        "comment": answer.get("comment") or "",
    }


# A word is never broken inside (no "Incomprehe/nsible"): in the answer panel's row each option
# is about 27rem / n wide, room for about 56 / n characters of a label's small type (11 for a
# 1–5 scale, 7 for 0–7); a scale with a longer word shows its end labels under the row instead.
ROW_CHARACTERS = 56


@register.filter
def labels_fit(question: Question) -> bool:
    """Tell whether every label of the question's scale is short enough to stand under its number,
    and each of its words fits the option's width without being broken."""
    options = question.options()
    widest = ROW_CHARACTERS // max(1, len(options))
    return all(len(label) <= SHORT_LABEL and all(len(word) <= widest for word in label.split())
               for _, label in options)


@register.filter
def any_rubric(questions: Iterable[Question]) -> bool:
    """Tell whether any of the questions has a rubric (the page then shows its rating guide)."""
    return any(question.rubric for question in questions)


@register.filter
def rubric_html(text: str) -> SafeString:
    """Render a rubric's Markdown, sanitised; cached, because every item page shows it again."""
    return _rubric_html(text or "")


@register.filter
def question_rubric_html(question: Question) -> SafeString:
    """Render a question's rubric without the question's own prompt when the rubric opens with it:
    the guide (and the instructions) show the prompt as the rubric's heading, or beside it as the
    question's legend, so it would be read twice in a row."""
    return _rubric_html(_without_prompt(question.rubric or "", question.prompt or ""))


def _without_prompt(rubric: str, prompt: str) -> str:
    text, prompt = rubric.lstrip(), prompt.strip()
    if not prompt or not text.casefold().startswith(prompt.casefold()):
        return rubric
    rest = text[len(prompt):]
    if rest[:1].isalnum():  # the prompt "Fluency" before "Fluency of the text: …" is no repeat
        return rubric
    rest = rest.lstrip(" \t:.?!—–-").lstrip()
    return (rest[:1].upper() + rest[1:]) if rest else ""


@lru_cache(maxsize=256)
def _rubric_html(text: str) -> SafeString:
    return mark_safe(render_markdown(text))  # noqa: S308 - sanitised by nh3


def _option_key(value: float) -> str:
    number = float(value)
    return str(int(number)) if number.is_integer() else repr(number)
