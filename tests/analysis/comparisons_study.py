"""A comparative study built with the ORM (items, comparisons, participants, responses and
answers as the contract stores them), its true order of systems planted: for the analysis and
API tests of issue 25."""

from __future__ import annotations

from itertools import combinations

import numpy as np

from annotation.models import Answer, Response
from core.comparative import shown_order
from studies.models import Item, Participant, Question

SYSTEMS = ("alpha", "bravo", "charlie", "delta", "echo")
TRUTH = dict(zip(SYSTEMS, np.linspace(1.6, -1.6, len(SYSTEMS)), strict=True))  # log-strengths
SOURCES = 8
ANNOTATORS = 6


def output_id(source: int, system: str) -> str:
    return f"s{source}-{system}"


def add_outputs(study, *, role=Item.Role.MAIN, start: int = 100) -> None:
    """One output per system and source; a metric that tracks the planted strength."""
    Item.objects.bulk_create([
        Item(study=study, external_id=output_id(s, system), position=start + n,
             text=f"{system} on document {s}", system=system, source=f"doc{s}", role=role,
             metrics={"tracking": float(TRUTH[system]) + 0.1 * (s % 3)})
        for n, (s, system) in enumerate((s, system) for s in range(SOURCES) for system in SYSTEMS)])


def comparative_question(study, kind: str, *, key: str = "pref", position: int = 1,
                         options: dict | None = None) -> Question:
    return Question.objects.create(study=study, kind=kind, key=key, position=position,
                                   prompt="Which is better?", values=[], labels={},
                                   comparison=options or {})


def comparisons(study, kind: str, *, start: int = 1000) -> list[Item]:
    """The comparisons: every pair of systems per source (pairwise), or every source's outputs
    (ranking), or two tuples of four per source (bws)."""
    rows = []
    for s in range(SOURCES):
        outs = [output_id(s, system) for system in SYSTEMS]
        if kind == "pairwise":
            groups = [list(p) for p in combinations(outs, 2)]
        elif kind == "ranking":
            groups = [outs]
        else:
            groups = [outs[:4], outs[1:]]
        rows += [(f"cmp-doc{s}-{n + 1}", g, f"doc{s}") for n, g in enumerate(groups)]
    return Item.objects.bulk_create([
        Item(study=study, external_id=external, position=start + n, outputs=outs, source=source,
             meta={"design": "pairs" if kind == "pairwise" else "tuples", "seed": 0})
        for n, (external, outs, source) in enumerate(rows)])


def _system(output: str) -> str:
    return output.split("-", 1)[1]


def judge(kind: str, outputs: list[str], shown: list[str], rng: np.random.Generator,
          *, reverse: bool = False) -> tuple[float, dict]:
    """One planted judgment: Bradley–Terry / Plackett–Luce draws from the true strengths (the
    order reversed with ``reverse``)."""
    sign = -1.0 if reverse else 1.0
    noisy = {o: sign * TRUTH[_system(o)] + rng.gumbel() for o in outputs}
    ranked = sorted(outputs, key=lambda o: -noisy[o])
    if kind == "pairwise":
        return float(outputs.index(ranked[0])), {"shown": shown, "pick": ranked[0],
                                                 "strength": ""}
    if kind == "ranking":
        return float(outputs.index(ranked[0])), {"shown": shown, "order": [[o] for o in ranked]}
    return float(outputs.index(ranked[0])), {"shown": shown, "best": ranked[0],
                                             "worst": ranked[-1]}


def answer_all(study, question: Question, items: list[Item], *, seed: int = 0,
               reverse: bool = False, annotators: int = ANNOTATORS) -> list[Participant]:
    """Every annotator judges every comparison once (current, first presentation)."""
    rng = np.random.default_rng(seed)
    people = Participant.objects.bulk_create([
        Participant(study=study, pseudonym_number=n + 1, consented_at=None)
        for n in range(annotators)])
    responses, judgments = [], []
    for person in people:
        for item in items:
            shown = shown_order(item.outputs, f"{person.pk}:{item.pk}")
            responses.append(Response(participant=person, item=item, active_ms=4000))
            judgments.append(judge(question.kind, list(item.outputs), shown, rng,
                                   reverse=reverse))
    responses = Response.objects.bulk_create(responses)
    Answer.objects.bulk_create([
        Answer(response=r, question=question, value=value, choice=choice)
        for r, (value, choice) in zip(responses, judgments, strict=True)])
    return people
