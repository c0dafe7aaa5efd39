"""Presets as the questionnaire shows them.

A *scale preset* describes one question's scale: its values and reductions come from the
statistics package's `PRESETS` (one definition), the rubric and labels from here, in each study
language. A *study preset* asks several questions per item (`summeval-4x5`).
"""

from __future__ import annotations

from typing import Any

from core.stats.scales import PRESETS

# Borovikova et al. 2022, §3.3: the rubric of the 0–7 scale. The study ran in French; both are shipped.
_COREF_RUBRIC = {
    "en": (
        "Rate the system's annotation as part of an information retrieval system.\n\n"
        "- **0**: significant errors on key elements\n"
        "- **1–2**: significant errors on peripheral elements\n"
        "- **3–4**: insignificant errors on key elements\n"
        "- **5–6**: insignificant errors on peripheral elements\n"
        "- **7**: no errors\n\n"
        "*Key elements* carry the core of the text: removing them loses its meaning. "
        "*Peripheral elements* can be removed without severe consequences."
    ),
    "fr": (
        "Évaluez l'annotation du système comme partie d'un système de recherche d'information.\n\n"
        "- **0** : erreurs significatives sur des éléments clés\n"
        "- **1–2** : erreurs significatives sur des éléments périphériques\n"
        "- **3–4** : erreurs non significatives sur des éléments clés\n"
        "- **5–6** : erreurs non significatives sur des éléments périphériques\n"
        "- **7** : aucune erreur\n\n"
        "Les *éléments clés* portent le sens du texte : les retirer le fait perdre. "
        "Les *éléments périphériques* peuvent être retirés sans conséquence grave."
    ),
}
_COREF_LABELS_FR = {
    0: "erreurs significatives sur des éléments clés",
    1: "erreurs significatives sur des éléments périphériques",
    2: "erreurs significatives sur des éléments périphériques",
    3: "erreurs non significatives sur des éléments clés",
    4: "erreurs non significatives sur des éléments clés",
    5: "erreurs non significatives sur des éléments périphériques",
    6: "erreurs non significatives sur des éléments périphériques",
    7: "aucune erreur",
}
_SIMILARITY_RUBRIC = {
    "en": "How similar in meaning are the two sentences? 1 = dissimilar … 5 = identical.",
    "fr": "Les deux phrases ont-elles le même sens ? 1 = différentes … 5 = identiques.",
}
_SIMILARITY_LABELS_FR = {
    1: "différentes",
    2: "plutôt différentes",
    3: "ni semblables ni différentes",
    4: "plutôt semblables",
    5: "identiques",
}

# SummEval's four dimensions (Fabbri et al. 2021, §4.2, after Kryściński et al. 2019 and the DUC
# quality questions), each rated 1–5; the wording of the rubrics is ours.
_SUMMEVAL = [
    ("coherence", "Coherence", "Coherence",
     "The collective quality of all sentences: the summary is well structured and well organised, "
     "building from sentence to sentence into a coherent body of information about a topic, not "
     "a heap of related facts.",
     "La qualité d'ensemble des phrases : le résumé est bien structuré et bien organisé, et "
     "forme un tout cohérent sur un sujet, pas un amas de faits."),
    ("consistency", "Consistency", "Cohérence factuelle",
     "The factual alignment of the summary with the source: a consistent summary states only "
     "what the source entails; invented or contradicted facts count against it.",
     "L'accord factuel du résumé avec la source : un résumé fidèle n'affirme que ce que la source "
     "implique ; un fait inventé ou contredit le pénalise."),
    ("fluency", "Fluency", "Fluidité",
     "The quality of the individual sentences: no formatting problems, capitalisation errors or "
     "obviously ungrammatical sentences that make the text hard to read.",
     "La qualité des phrases prises une à une : pas de problème de mise en forme, de majuscules "
     "ou de phrase agrammaticale qui gêne la lecture."),
    ("relevance", "Relevance", "Pertinence",
     "The selection of important content from the source: the summary keeps only the important "
     "information; redundancy and excess information count against it.",
     "Le choix du contenu important de la source : le résumé ne garde que l'essentiel ; les "
     "redites et les détails superflus le pénalisent."),
]
_LIKERT_1_5_LABELS_FR = {1: "très mauvais", 2: "mauvais", 3: "moyen", 4: "bon", 5: "très bon"}

# Scale presets: the values, labels, rubric and reductions of one question.
SCALE_DISPLAY = {"likert-0-7-coref": "coref", "similarity-1-5": "pair", "likert-1-5": "text"}
_RUBRICS = {"likert-0-7-coref": _COREF_RUBRIC, "similarity-1-5": _SIMILARITY_RUBRIC,
            "likert-1-5": {"en": "1 = very poor … 5 = very good.",
                           "fr": "1 = très mauvais … 5 = très bon."}}
_LABELS_FR = {"likert-0-7-coref": _COREF_LABELS_FR, "similarity-1-5": _SIMILARITY_LABELS_FR,
              "likert-1-5": _LIKERT_1_5_LABELS_FR}
# Study presets that ask several questions per item (a scale preset asks one, key "rating").
STUDY_PRESETS = ("summeval-4x5",)
DEFAULT_QUESTION_KEY = "rating"


def preset_names() -> list[str]:
    """Every preset a study can start from: the scale presets and the study presets."""
    return sorted([*PRESETS, *STUDY_PRESETS])


def scale_preset_names() -> list[str]:
    """The presets that describe one question's scale."""
    return sorted(PRESETS)


def preset_scale(name: str, language: str = "en") -> dict[str, Any]:
    """Return the scale fields of a scale preset: values, labels, rubric, reductions, display.

    JSON keys are strings ("0", "1", …) because the scale is stored in JSON fields; reductions
    are an ordered list of ``{"name", "map"}`` (see `studies.models.Question`).
    """
    if name not in PRESETS:
        raise ValueError(f"unknown scale preset {name!r}; choose one of "
                         f"{', '.join(scale_preset_names())}")
    spec = PRESETS[name]
    labels = _LABELS_FR[name] if language == "fr" else spec["labels"]
    return {
        "preset": name,
        "values": list(spec["values"]),
        "labels": {_key(k): v for k, v in labels.items()},
        "rubric": _RUBRICS[name].get(language, _RUBRICS[name]["en"]),
        "reductions": [{"name": red, "map": {_key(k): v for k, v in mapping.items()}}
                       for red, mapping in spec["reductions"].items()],
        "display": SCALE_DISPLAY[name],
    }


def preset_questions(name: str, language: str = "en") -> tuple[str, list[dict[str, Any]]]:
    """Return a preset's item display and its questions (the fields of `Question`, in order).

    A scale preset asks one required question, key ``rating``, with no prompt of its own (the
    page says "Your rating"); ``summeval-4x5`` asks SummEval's four 1–5 questions, each with a
    "can't judge" choice and an optional comment.
    """
    if name in PRESETS:
        scale = preset_scale(name, language)
        display = scale.pop("display")
        return display, [{"key": DEFAULT_QUESTION_KEY, "prompt": "", **scale}]
    if name == "summeval-4x5":
        scale = preset_scale("likert-1-5", language)
        scale.pop("display")
        questions = []
        for key, title_en, title_fr, rubric_en, rubric_fr in _SUMMEVAL:
            title, rubric = (title_fr, rubric_fr) if language == "fr" else (title_en, rubric_en)
            questions.append({**scale, "key": key, "prompt": title,
                              "rubric": rubric, "allow_comment": True,
                              "allow_cant_judge": True})
        return "text", questions
    raise ValueError(f"unknown preset {name!r}; choose one of {', '.join(preset_names())}")


def _key(value: float) -> str:
    number = float(value)
    return str(int(number)) if number.is_integer() else repr(number)
