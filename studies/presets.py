"""Scale presets as the questionnaire shows them: values and reductions from the statistics
package's `PRESETS` (one definition), plus the rubric and labels in each study language."""

from __future__ import annotations

from analysis.stats.scales import PRESETS

# Seed 000 §3.3: the rubric of the 0–7 scale. The study ran in French; both are shipped.
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

DISPLAY = {"likert-0-7-coref": "coref", "similarity-1-5": "pair"}
_RUBRICS = {"likert-0-7-coref": _COREF_RUBRIC, "similarity-1-5": _SIMILARITY_RUBRIC}
_LABELS_FR = {"likert-0-7-coref": _COREF_LABELS_FR, "similarity-1-5": _SIMILARITY_LABELS_FR}


def preset_names() -> list[str]:
    return sorted(PRESETS)


def preset_scale(name: str, language: str = "en") -> dict:
    """Return the scale fields of a preset: values, labels, rubric, reductions, display.

    JSON keys are strings ("0", "1", …) because the scale is stored in JSON fields.
    """
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; choose one of {', '.join(preset_names())}")
    spec = PRESETS[name]
    labels = _LABELS_FR[name] if language == "fr" else spec["labels"]
    return {
        "preset": name,
        "values": list(spec["values"]),
        "labels": {str(k): v for k, v in labels.items()},
        "rubric": _RUBRICS[name].get(language, _RUBRICS[name]["en"]),
        "reductions": {
            red: {str(k): v for k, v in mapping.items()} for red, mapping in spec["reductions"].items()
        },
        "display": DISPLAY[name],
    }
