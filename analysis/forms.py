"""The dashboard's rerun form: its fields, bounds, choices and validation come from AnalysisSettings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import forms

from core.settings import AnalysisSettings, SettingsError, knob
from studies.forms import PseudonymsField, settings_form_field  # noqa: F401 (re-exported)


class RunForm(forms.Form):
    """Start a run with some of the analysis settings changed; the rest come from the study."""

    FIELDS = ("level", "trust_variant", "simple_threshold", "seed", "excluded_annotators")
    REQUIRED = ("level", "trust_variant", "simple_threshold")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for path in self.FIELDS:
            self.fields[path] = settings_form_field(path, required=path in self.REQUIRED)

    @classmethod
    def initial_from(cls, settings: AnalysisSettings | Mapping[str, Any]) -> dict[str, Any]:
        """Return the form's initial values: the settings' values of its fields.

        ``settings`` may be what a run or a study stored: a value missing there, or no longer
        valid (a negative seed an older version accepted), starts from its default instead.
        """
        if isinstance(settings, AnalysisSettings):
            settings = settings.to_dict()
        defaults = AnalysisSettings().to_dict()
        out = {}
        for name in cls.FIELDS:
            value = settings.get(name, defaults[name])
            out[name] = value if knob(name).problem(value) is None else defaults[name]
        return out

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        given = {name: value for name, value in cleaned.items()
                 if value is not None and name in self.FIELDS}
        try:
            AnalysisSettings.from_mapping(given)
        except SettingsError as exc:
            for path, messages in exc.fields.items():
                for message in messages:  # every key path given starts with a field's name
                    self.add_error(path.split(".")[0], message)
        return {name: value for name, value in given.items() if name not in self.errors}
