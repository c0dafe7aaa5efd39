"""Demo studies with synthetic responses from annotators with planted behaviours.

Used by `make run` (through `manage.py seed_demo`) and by the tests: the analyses must find
what was planted here.

Planted behaviours (pseudonyms follow the order of first response, which is this order):
  reliable annotators (several), `random` (uniform clicks in about 0.2 s each: the *too fast*
  rule's case), `constant` (always the same value: a straight-liner),
  `slow` (reliable but ~7 minutes per item), `controls-high` (rates random control pairs as
  similar), `inconsistent` (answers duplicated items very differently the second time).

The systems study (`demo_systems_study`) plants instead the quality of four systems over shared
sources: an order and a tie (`SYSTEM_QUALITY`) the systems analysis must recover. It also asks a
pairwise question ("Which translation is better?", ties allowed) about every pair of the four
systems' outputs of its first `PAIRWISE_SOURCES` sources; the judgments follow the same planted
quality with a little noise, and one annotator (`POSITION_BIASED`) often picks the output shown
on the left whatever it says: the comparisons analysis must recover the order and flag them.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import transaction

from annotation.models import Response
from annotation.store import AnnotatorRow, ResponseRow, responses_store
from core.comparative import judgment_clean, shown_order
from core.items import coref_annotation, coref_plain_text
from core.metrics.formats import Document, Mention
from core.responses import Cell
from judges.services import judge_answers_import, judge_create
from studies.models import Item, Participant, Study, SystemScore
from studies.services import (
    items_import,
    participants_invite,
    study_create,
    study_open,
)

DEMO_USER = "researcher"
DEMO_NEWCOMERS = 200  # people who may try a demo through its open link
DEMO_PASSWORD = "concord-demo"  # noqa: S105 - the demo's published login, local only

BEHAVIOURS = ["reliable", "reliable", "random", "reliable", "constant", "reliable", "slow",
              "reliable", "controls-high", "reliable", "inconsistent", "reliable"]

_SUBJECTS = ["The committee", "My neighbour", "The old captain", "A young doctor", "The teacher",
             "Our manager", "The farmer", "A tourist", "The pilot", "The baker"]
_ACTIONS = [("approved the new budget", "accepted the new budget"),
            ("fixed the broken fence", "repaired the damaged fence"),
            ("walked to the station", "went on foot to the station"),
            ("bought fresh bread", "purchased some fresh bread"),
            ("cancelled the meeting", "called off the meeting"),
            ("painted the kitchen", "gave the kitchen a new coat of paint"),
            ("lost the keys", "could not find the keys"),
            ("praised the students", "complimented the pupils")]
_DRIFT = ["yesterday", "last week", "in the morning", "after lunch", "on Sunday"]


@dataclass(frozen=True)
class DemoStudy:
    study: Study
    participants: list[Participant]
    behaviours: dict[int, str]


def _csv(rows: list[dict[str, object]]) -> bytes:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode()


def _likert_items(rng: np.random.Generator,
                  n: int) -> tuple[list[dict[str, object]], dict[str, dict[str, Any]]]:
    """Return the coreference study's item rows and each item's annotation by item id.

    The random draws are those the demo always made (in the same order), so its items, metrics
    and answers stay what its frozen results were computed from; the annotation only adds what
    the page shows (`_coref_passage`).
    """
    rows: list[dict[str, object]] = []
    annotations: dict[str, dict[str, Any]] = {}
    for i in range(n):
        subject = _SUBJECTS[i % len(_SUBJECTS)]
        action = _ACTIONS[i % len(_ACTIONS)][0]
        errors = int(rng.integers(0, 4))
        quality = float(np.clip(1 - 0.25 * errors + rng.normal(0, 0.05), 0, 1))
        item_id = f"doc{i + 1:03d}"
        annotations[item_id] = _coref_passage(item_id, subject, action, _DRIFT[i % len(_DRIFT)],
                                              errors)
        rows.append({
            "id": item_id,
            "text": coref_plain_text(annotations[item_id]),
            "metric:MUC_F1": round(quality, 4),
            "metric:B3_F1": round(float(np.clip(quality + rng.normal(0, 0.08), 0, 1)), 4),
            "feature:border": int(rng.integers(0, 2)),
            "feature:silence": int(rng.integers(0, 2)),
            "feature:noise": errors,
        })
    return rows, annotations


def _coref_passage(name: str, subject: str, action: str, when: str,
                   errors: int) -> dict[str, Any]:
    """Return a demo passage's gold and system coreference, as an imported item stores them.

    Gold: the subject and its two later mentions are one chain, the town's two mentions
    another. The system makes the item's planted number of errors (its `noise` feature), in
    this order: it links "it" to the subject's chain, splits "They" off into a chain of its
    own, and misses the town's second mention. Character offsets, as RuCoCo documents have them.
    """
    later = "the " + subject[2:] if subject.startswith("A ") else subject[0].lower() + subject[1:]
    parts = [(subject, "subject"), (f" {action} {when}. ", None), ("They", "they"),
             (" were pleased, and ", None), ("the town", "town"), (" noticed. Later ", None),
             (later, "later"), (" explained to ", None), ("the town", "town2"),
             (" why ", None), ("it", "it"), (" mattered.", None)]
    text, spans = "", {}
    for part, role in parts:
        if role:
            spans[role] = Mention(0, len(text), len(text) + len(part))
        text += part
    subject_chain = [spans["subject"], spans["they"], spans["later"]]
    town = [spans["town"], spans["town2"]]
    system = [list(subject_chain), list(town)]
    if errors >= 1:
        system[0].append(spans["it"])
    if errors >= 2:
        system[0].remove(spans["they"])
        system.append([spans["they"]])
    if errors >= 3:
        system[1].remove(spans["town2"])

    def document(entities: list[list[Mention]]) -> Document:
        chains = [tuple(sorted(e)) for e in entities if e]
        return Document(name=name, entities=tuple(sorted(chains)), format="rucoco-json",
                        text=text)

    return coref_annotation(document([subject_chain, town]), document(system), tokens=None)


def _pair_items(rng: np.random.Generator, n: int, n_controls: int) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for i in range(n):
        subject = _SUBJECTS[i % len(_SUBJECTS)]
        a, b = _ACTIONS[(i // len(_SUBJECTS)) % len(_ACTIONS)]
        when = _DRIFT[i % len(_DRIFT)]
        variant = i % 3
        text_b = (f"{subject} {b} {when}." if variant == 0
                  else f"{subject} {a} {_DRIFT[(i + 2) % len(_DRIFT)]}." if variant == 1
                  else f"{_SUBJECTS[(i + 3) % len(_SUBJECTS)]} {b} {when}.")
        rows.append({"id": f"pair{i + 1:03d}", "text_a": f"{subject} {a} {when}.", "text_b": text_b,
                     "control": 0})
    for c in range(n_controls):
        # A random pair: sentence a of one item with sentence b of a distant, unrelated one.
        src, other = rows[c]["text_a"], rows[(c + n // 2 + 1) % n]["text_b"]
        rows.append({"id": f"control{c + 1:02d}", "text_a": src, "text_b": other, "control": 1})
    order = rng.permutation(len(rows))
    return [rows[k] for k in order]


def _answer(behaviour: str, truth: float, values: list[int], rng: np.random.Generator, *,
            control: bool, repeat: bool) -> int:
    lo, hi = values[0], values[-1]
    if behaviour == "random":
        return int(rng.integers(lo, hi + 1))
    if behaviour == "constant":
        return values[len(values) // 2]
    if behaviour == "controls-high" and control:
        return int(rng.integers(hi - 1, hi + 1))
    if behaviour == "inconsistent" and repeat:
        return int(lo if truth > (lo + hi) / 2 else hi)
    return int(np.clip(round(truth + rng.normal(0, 0.6)), lo, hi))


@transaction.atomic
def demo_study(*, owner: User, slug: str, preset: str, seed: int = 7,
               complete: bool = True) -> DemoStudy:
    """Create one demo study, invite the planted annotators and store their answers."""
    rng = np.random.default_rng(seed)
    likert = preset == "likert-0-7-coref"
    study = study_create(
        owner=owner, slug=slug, preset=preset,
        title="Demo: coreference quality (0–7)" if likert else "Demo: sentence similarity (1–5)",
        instructions=("Read each passage twice, as the gold annotation and as the system's, and "
                      "rate the system's coreference annotation. Mentions are in brackets, "
                      "numbered and coloured by chain." if likert else
                      "Rate how similar in meaning the two sentences are."),
        # Every item for each annotator; places for the planted annotators and DEMO_NEWCOMERS
        # people trying the questionnaire through the open link `make run` prints.
        design={"items_per_participant": 0,
                "annotators_per_item": len(BEHAVIOURS) + DEMO_NEWCOMERS,
                "duplicates": 3, "duplicate_min_gap": 5, "seed": seed},
    )
    rows, annotations = _likert_items(rng, 36) if likert else (_pair_items(rng, 40, 6), {})
    items_import(study=study, data=_csv(rows), filename=f"{slug}.csv")
    if annotations:
        coref = list(study.items.filter(external_id__in=annotations))
        for item in coref:
            item.annotation = annotations[item.external_id]
        Item.objects.bulk_update(coref, ["annotation"])
    study_open(study=study)
    question = study.primary_question
    values = [int(v) for v in question.values]
    items = {item.pk: item for item in study.items.all()}
    truth = {}
    for pk, item in items.items():
        if item.is_control:
            truth[pk] = values[0] + 0.3
        elif likert:
            truth[pk] = values[0] + (values[-1] - values[0]) * item.metrics.get("MUC_F1", 0.5)
        else:
            truth[pk] = float(rng.uniform(values[0] + 1, values[-1]))
    participants = participants_invite(study=study, count=len(BEHAVIOURS), label="demo")
    behaviours = {}
    responses: list[ResponseRow] = []
    for n, (p, behaviour) in enumerate(zip(participants, BEHAVIOURS, strict=True)):
        behaviours[p.pk] = behaviour
        for a in p.assignments.order_by("position"):
            item = items[a.item_id]
            value = _answer(behaviour, truth[a.item_id], values, rng, control=item.is_control,
                            repeat=a.presentation == 2)
            seconds = rng.uniform(380, 520) if behaviour == "slow" else rng.lognormal(2.6, 0.4)
            if behaviour == "random":
                # 0.15–0.3 s, derived from the same draw: the generator's stream, and with it
                # every other annotator's answers and times, stays that of the seed.
                seconds = 0.15 + seconds % 0.15
            ms = int(seconds * 1000)
            responses.append(ResponseRow(
                annotator=n, item_id=a.item_id, presentation=a.presentation, assignment_id=a.pk,
                position=a.position, active_ms=ms, source=Response.Source.APP,
                cells={question.key: Cell(float(value))},
                events=[["shown", 0], [f"select:{value}", max(ms - 300, ms // 2)], ["answer", ms]],
            ))
    # Stored as the questionnaire would have: consented, counted, checks scored, and their
    # pseudonyms given in the order they answered (as the app gives them at a first answer).
    responses_store(study=study, annotators=[AnnotatorRow(participant=p) for p in participants],
                    responses=responses, consented=True, checks_scored=True)
    # One invitation left unused, for trying the questionnaire with a private link. Kept since
    # the open link came: participants' ids seed their assignment orders, so the next demo's
    # answers (and the frozen demo results) depend on this participant's id being taken.
    participants_invite(study=study, count=1, label="try me")
    return DemoStudy(study=study, participants=participants, behaviours=behaviours)


# The systems demo (issue 24, point 5): four systems translate the same 30 sources, rated on two
# questions by five annotators. Each system's true mean per question, on the 1–5 scale: a planted
# order with a planted tie (`mt-medium` and `mt-tuned` are equally good: the analysis must not
# find them significantly different), the same order on both questions.
SYSTEM_QUALITY = {"mt-large": (4.3, 4.5), "mt-medium": (3.5, 3.8), "mt-tuned": (3.5, 3.8),
                  "mt-small": (2.4, 2.9)}
SYSTEM_SOURCES = 30
SYSTEM_ANNOTATORS = 5
SYSTEM_QUESTIONS = [
    {"key": "adequacy", "prompt": "Does the translation convey the meaning of the source?",
     "scale": "likert-1-5"},
    {"key": "fluency", "prompt": "Does the translation read as fluent, natural text?",
     "scale": "likert-1-5"},
]
# The pairwise question (issue 25): every pair of the four systems' outputs of the first
# PAIRWISE_SOURCES sources (6 pairs each, a subset `studies.services.comparisons_generate`, which
# pairs every source's outputs, does not make: the demo stays small), judged by every annotator. A judgment compares the two
# outputs' planted quality plus noise: within TIE_MARGIN, a tie. The annotator POSITION_BIASED
# picks the output shown first (left) in POSITION_BIAS of their judgments, whatever the outputs.
PAIRWISE_KEY = "preference"
PAIRWISE_OPTIONS: dict[str, Any] = {"ties": True}
PAIRWISE_QUESTION: dict[str, Any] = {"key": PAIRWISE_KEY, "kind": "pairwise",
                                     "prompt": "Which translation is better?",
                                     "options": PAIRWISE_OPTIONS}
PAIRWISE_SOURCES = 10
PAIRWISE_NOISE = 0.45
TIE_MARGIN = 0.2
POSITION_BIASED = 2  # the third annotator
POSITION_BIAS = 0.7
_SOURCE_TOPICS = ["the harbour", "the election", "the new bridge", "the school fees", "the storm",
                  "the museum", "the train strike", "the harvest", "the concert", "the budget"]


def _system_items(rng: np.random.Generator) -> tuple[list[dict[str, object]],
                                                     dict[str, tuple[str, str, float]]]:
    """Return the item rows and each item's (system, source, true quality on adequacy).

    Each source has a difficulty shared by every system's output of it (the source effect the
    mixed model separates); the item metrics are `semsim`, which follows the true quality
    closely, and `overlap`, which follows it loosely."""
    rows: list[dict[str, object]] = []
    truth: dict[str, tuple[str, str, float]] = {}
    difficulty = rng.normal(0, 0.35, size=SYSTEM_SOURCES)
    for s in range(SYSTEM_SOURCES):
        source = f"src{s + 1:02d}"
        subject = _SUBJECTS[s % len(_SUBJECTS)]
        topic = _SOURCE_TOPICS[s % len(_SOURCE_TOPICS)]
        for system, (adequacy, _) in SYSTEM_QUALITY.items():
            quality = adequacy + difficulty[s]
            item_id = f"{source}-{system}"
            truth[item_id] = (system, source, quality)
            level = float(np.clip((quality - 1) / 4, 0, 1))
            rows.append({
                "id": item_id,
                "text": (f"Source {s + 1}: {subject} spoke about {topic}.\n\n"
                         f"Translation: {subject} "
                         + ("talked about" if quality > 3.6 else "said things on")
                         + f" {topic}{'' if quality > 2.8 else ' and other'}."),
                "metric:semsim": round(float(np.clip(level + rng.normal(0, 0.05), 0, 1)), 4),
                "metric:overlap": round(float(np.clip(0.5 + 0.2 * (level - 0.5)
                                                      + rng.normal(0, 0.2), 0, 1)), 4),
            })
    return rows, truth


@transaction.atomic
def demo_systems_study(*, owner: User, slug: str = "demo-systems", seed: int = 25) -> DemoStudy:
    """Create the systems demo: 4 systems × 30 sources, two questions, five annotators who rate
    every output, with the planted order and tie of `SYSTEM_QUALITY`, two item metrics and a
    system-level metric score per system.

    The draws are random: under the planted tie a test is still significant in 5 % of draws
    per question (seed 24 drew p = 0.03 on fluency once the draws stopped depending on database
    ids); seed 25 is a draw where the tie shows as planted, so the demo teaches what it
    should."""
    rng = np.random.default_rng(seed)
    study = study_create(
        owner=owner, slug=slug, questions=[*SYSTEM_QUESTIONS, PAIRWISE_QUESTION],
        title="Demo: which system translates best (4 systems, 1–5)",
        instructions=("Each page shows a source sentence and one system's translation of it. "
                      "Rate the translation on both questions."),
        design={"items_per_participant": 0,
                "annotators_per_item": SYSTEM_ANNOTATORS + DEMO_NEWCOMERS, "seed": seed},
    )
    rows, truth = _system_items(rng)
    items_import(study=study, data=_csv(rows), filename=f"{slug}.csv")
    # Each output names its system and its source (the block of outputs of one source).
    stored = list(study.items.all())
    for item in stored:
        item.system, item.source = truth[item.external_id][:2]
    Item.objects.bulk_update(stored, ["system", "source"])
    comparisons = _comparisons(study, stored, seed=seed)
    # A system-level score of a third metric, as a `system,metric,value` file would give it.
    SystemScore.objects.bulk_create(
        SystemScore(study=study, system=system, metric="sys_bleu", value=round(value, 2))
        for system, value in zip(SYSTEM_QUALITY, (31.5, 27.0, 27.9, 19.2), strict=True))
    study_open(study=study)
    by_pk = {item.pk: item for item in stored}
    offsets = {key: [q[n] - q[0] for q in SYSTEM_QUALITY.values()]
               for n, key in enumerate(("adequacy", "fluency"))}
    systems = list(SYSTEM_QUALITY)
    participants = participants_invite(study=study, count=SYSTEM_ANNOTATORS, label="demo")
    bias = rng.normal(0, 0.25, size=SYSTEM_ANNOTATORS)
    # Each answer draws from a generator of its own, keyed by the annotator and the item: the
    # draws do not depend on the order a participant's items come in, which follows the
    # participant's database id (`core.design.participant_seed`), so the demo's answers are the
    # same whichever ids the database hands out (a test run's earlier tests take some).
    quality = {external: q for external, (_, _, q) in truth.items()}
    responses: list[ResponseRow] = []
    for n, p in enumerate(participants):
        for a in p.assignments.order_by("position"):
            if a.item_id in comparisons:
                judge = np.random.default_rng([seed + 1, n, comparisons[a.item_id].position])
                value, choice, ms = _judgment(comparisons[a.item_id], quality, judge,
                                              participant=p, biased=n == POSITION_BIASED)
                responses.append(ResponseRow(
                    annotator=n, item_id=a.item_id, presentation=a.presentation,
                    assignment_id=a.pk, position=a.position, active_ms=ms,
                    source=Response.Source.APP,
                    cells={PAIRWISE_KEY: Cell(value, choice=choice)},
                    events=[["shown", 0], [f"pick:{choice['pick']}", max(ms - 300, ms // 2)],
                            ["answer", ms]]))
                continue
            system, _, adequacy = truth[by_pk[a.item_id].external_id]
            fluency = adequacy + offsets["fluency"][systems.index(system)]
            draw = np.random.default_rng([seed, n, by_pk[a.item_id].position])
            cells = {key: Cell(float(np.clip(round(mean + bias[n] + draw.normal(0, 0.6)), 1, 5)))
                     for key, mean in (("adequacy", adequacy), ("fluency", fluency))}
            ms = int(draw.lognormal(2.8, 0.35) * 1000)
            responses.append(ResponseRow(
                annotator=n, item_id=a.item_id, presentation=a.presentation, assignment_id=a.pk,
                position=a.position, active_ms=ms, source=Response.Source.APP, cells=cells,
                events=[["shown", 0], ["answer", ms]]))
    responses_store(study=study, annotators=[AnnotatorRow(participant=p) for p in participants],
                    responses=responses, consented=True, checks_scored=True)
    # Two LLM judges beside the people (issue 27): stored apart, compared in the Judges section.
    files = demo_judge_files(
        quality=quality, systems={external: system for external, (system, _, _) in truth.items()},
        comparisons=[(c.external_id, list(c.outputs)) for c in
                     sorted(comparisons.values(), key=lambda c: c.position)])
    for fields in DEMO_JUDGES:
        made = judge_create(study=study, **fields)
        judge_answers_import(study=study, judge=made, data=files[fields["name"]],
                             filename=f"{fields['name']}.csv")
    return DemoStudy(study=study, participants=participants,
                     behaviours={p.pk: ("position-bias" if n == POSITION_BIASED else "reliable")
                                 for n, p in enumerate(participants)})


def _comparisons(study: Study, outputs: list[Item], *, seed: int) -> dict[int, Item]:
    """Create the comparisons: every pair of the systems' outputs of each of the first
    PAIRWISE_SOURCES sources (systems by name, pairs in order: the design's canonical order),
    ids ``cmp-<source>-<n>``; return them by id."""
    by_source: dict[str, list[Item]] = {}
    for item in outputs:
        by_source.setdefault(item.source, []).append(item)
    start = max(item.position for item in outputs) + 1
    made: list[Item] = []
    for source in sorted(by_source)[:PAIRWISE_SOURCES]:
        mine = sorted(by_source[source], key=lambda i: i.system)
        text = mine[0].text.split("\n\n")[0]  # the source sentence every output shares
        pairs = [(a, b) for n, a in enumerate(mine) for b in mine[n + 1:]]
        for k, (a, b) in enumerate(pairs, start=1):
            made.append(Item(study=study, external_id=f"cmp-{source}-{k}",
                             position=start + len(made), source=source, text=text,
                             outputs=[a.external_id, b.external_id],
                             meta={"design": "pairs", "seed": seed}))
    Item.objects.bulk_create(made)
    return {item.pk: item for item in study.items.exclude(outputs=[])}


def _judgment(comparison: Item, quality: dict[str, float], rng: np.random.Generator, *,
              participant: Participant, biased: bool) -> tuple[float, dict[str, Any], int]:
    """One planted pairwise judgment: its value, its stored choice and its time (ms). The
    outputs are shown in the order the questionnaire would show this participant."""
    shown = shown_order(comparison.outputs, f"{participant.pk}:{comparison.pk}")
    first, second = shown
    difference = quality[first] - quality[second] + rng.normal(0, PAIRWISE_NOISE)
    if biased and rng.random() < POSITION_BIAS:
        pick = first
    elif abs(difference) < TIE_MARGIN:
        pick = "tie"
    else:
        pick = first if difference > 0 else second
    value, choice = judgment_clean("pairwise", PAIRWISE_OPTIONS,
                                   comparison.outputs, {"shown": shown, "pick": pick})
    return value, choice, int(rng.lognormal(2.5, 0.35) * 1000)


# The systems demo's two LLM judges (issue 27, point 4): answers files as a judge's import reads
# them (`judges.services.judge_answers_import`; docs/judges.md), two runs each. The careful one
# rates close to the planted quality (noise JUDGE_NOISE["careful"]) and picks the better output
# of a pair; the other rates more noisily and picks the output shown first in FIRST_SHOWN_BIAS
# of its judgments whatever they say. Run 2 shows every pair in the order opposite to run 1,
# so the order consistency has pairs to read. Their draws come from generators of their own:
# the people's answers (and every number about them) do not move.
DEMO_JUDGES: tuple[dict[str, Any], ...] = (
    {"name": "careful-judge", "model": "demo-llm-large", "version": "2026-10",
     "prompt": "Rate the translation 1–5 for adequacy and fluency; pick the better of two.",
     "date": "2026-11-01", "temperature": 0.0,
     "notes": "planted: close to the true quality, a little noise"},
    {"name": "first-shown-judge", "model": "demo-llm-small", "version": "2026-10",
     "prompt": "Rate the translation 1–5 for adequacy and fluency; pick the better of two.",
     "date": "2026-11-01", "temperature": 1.0,
     "notes": "planted: prefers the output shown first; noisier ratings"},
)
JUDGE_NOISE = {"careful-judge": 0.35, "first-shown-judge": 1.1}
FIRST_SHOWN_BIAS = 0.8
JUDGE_RUNS = ("1", "2")


def demo_judge_files(*, quality: dict[str, float], systems: dict[str, str],
                     comparisons: list[tuple[str, list[str]]], seed: int = 27
                     ) -> dict[str, bytes]:
    """Return each demo judge's answers file (name → CSV bytes): both runs, both scale
    questions of every output, the pairwise question of every comparison.

    ``quality``: each output's planted adequacy (its fluency follows as the people's does);
    ``systems``: each output's system; ``comparisons``: (id, outputs in canonical order)."""
    names = list(SYSTEM_QUALITY)
    offsets = [q[1] - q[0] for q in SYSTEM_QUALITY.values()]
    files: dict[str, bytes] = {}
    for n, judge in enumerate(DEMO_JUDGES):
        name = judge["name"]
        rows: list[dict[str, object]] = []
        for r, run in enumerate(JUDGE_RUNS):
            draw = np.random.default_rng([seed, n, r])
            for item, adequacy in quality.items():
                fluency = adequacy + offsets[names.index(systems[item])]
                for key, mean in (("adequacy", adequacy), ("fluency", fluency)):
                    value = int(np.clip(round(mean + draw.normal(0, JUDGE_NOISE[name])), 1, 5))
                    rows.append({"item": item, "value": value, "items": "", "choice": "",
                                 "question": key, "run": run})
            for _, outputs in comparisons:
                shown = list(outputs) if r == 0 else list(outputs)[::-1]
                difference = (quality[shown[0]] - quality[shown[1]]
                              + draw.normal(0, JUDGE_NOISE[name] / 2))
                if name == "first-shown-judge" and draw.random() < FIRST_SHOWN_BIAS:
                    pick = shown[0]
                elif abs(difference) < TIE_MARGIN:
                    pick = "tie"
                else:
                    pick = shown[0] if difference > 0 else shown[1]
                rows.append({"item": "", "value": "", "items": "|".join(shown), "choice": pick,
                             "question": PAIRWISE_KEY, "run": run})
        files[name] = _csv(rows)
    return files


def demo_seed(*, reset: bool = False) -> tuple[object, list[DemoStudy]]:
    """Create the demo researcher and the three demo studies (idempotent unless `reset`): the
    coreference and similarity studies with planted annotators, then the systems study (made
    last, so that the first two keep the ids their frozen results were computed with)."""
    users = get_user_model().objects
    user, created = users.get_or_create(username=DEMO_USER, defaults={"is_staff": True,
                                                                       "is_superuser": True})
    if created:
        user.set_password(DEMO_PASSWORD)
        user.save()
    demos = []
    for slug, preset in (("demo-coref", "likert-0-7-coref"), ("demo-similarity", "similarity-1-5")):
        existing = Study.objects.filter(slug=slug).first()
        if existing and reset:
            existing.delete()
            existing = None
        if existing is None:
            demos.append(demo_study(owner=user, slug=slug, preset=preset))
    existing = Study.objects.filter(slug="demo-systems").first()
    if existing and reset:
        existing.delete()
        existing = None
    if existing is None:
        demos.append(demo_systems_study(owner=user))
    return user, demos
