"""Template helpers of the item page: each question's answer so far, its scale's layout, and
rubrics rendered once per process.

The page shows every question of a study under one Confirm. On a revisit (going back to an
answered item) the current answers come from `annotation.selectors.current_answers`
(`{key: {value, missing, comment}}`, values as floats); the radios compare them with the
scale's option keys ("3", "0.5"), so `answer_for` turns them into the same strings.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from django import template
from django.utils.html import strip_tags
from django.utils.safestring import SafeString, mark_safe

from annotation.selectors import Output, comparison_outputs
from studies.models import Item, Participant, Question
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
    raw = answer.get("choice")
    choice: dict[str, Any] = raw if isinstance(raw, dict) else {}
    return {
        "value": "" if value is None else _option_key(value),
        "cant_judge": answer.get("missing") == Question.Missing.CANT_JUDGE,
        "comment": answer.get("comment") or "",
        # A comparative question's judgment so far (core/comparative.py's stored form).
        "pick": choice.get("pick", ""),
        "strength": choice.get("strength", ""),
        "best": choice.get("best", ""),
        "worst": choice.get("worst", ""),
        "order": choice.get("order") or [],
    }


@register.simple_tag
def item_page(questions: Iterable[Question], item: Item | None,
              participant: Participant | str | None = None) -> dict[str, Any]:
    """Return what the item page asks about ``item``: the questions that apply to it
    (`Question.applies_to`) and, for a comparison, its outputs in the order this participant
    sees them (`core.comparative.shown_order`; a preview has no participant, its own order)."""
    if item is None:
        return {"questions": list(questions), "outputs": [], "comparison": False,
                "ranking": False}
    asked = [q for q in questions if q.applies_to(item)]
    outputs: list[Output] = []
    if item.outputs and any(q.is_comparative for q in asked):
        who = participant.pk if isinstance(participant, Participant) else "preview"
        outputs = comparison_outputs(item=item, key=f"{who}:{item.pk}")
    return {"questions": asked, "outputs": outputs, "comparison": bool(item.outputs),
            "ranking": any(q.kind == Question.Kind.RANKING for q in asked)}


@register.simple_tag
def ranking_rows(outputs: list[Output], answer: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows of a ranking question: its outputs in the order ranked so far (the order shown
    when not ranked yet), each with whether it is tied with the one above."""
    by_id = {o.external_id: o for o in outputs}
    rows: list[dict[str, Any]] = []
    order = answer.get("order") or []
    flat = [name for group in order for name in (group if isinstance(group, list) else [group])]
    if sorted(flat) != sorted(by_id):
        return [{"output": o, "tied": False} for o in outputs]
    for group in order:
        for n, name in enumerate(group if isinstance(group, list) else [group]):
            rows.append({"output": by_id[name], "tied": n > 0})
    return rows


@register.filter
def output_ids(outputs: list[Output]) -> list[str]:
    """The outputs' external ids in the order shown (the page sends them back as ``shown``)."""
    return [o.external_id for o in outputs]


@register.filter
def excerpt(text: str, length: int = 90) -> str:
    """An output's text cut to about ``length`` characters at a word, for a ranking's rows."""
    plain = " ".join(strip_tags(text or "").split())
    if len(plain) <= length:
        return plain
    return plain[:length].rsplit(" ", 1)[0] + "…"


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


@register.filter
def json_text(value: Any) -> str:
    """``value`` as JSON text, for a data attribute (the template escapes it there)."""
    return json.dumps(value, ensure_ascii=False)
