"""The dashboard's rerun form: its fields, bounds, choices and validation come from AnalysisSettings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import forms

from core.settings import AnalysisSettings, SettingsError, knob, knobs
from studies.forms import PseudonymsField, settings_form_field  # noqa: F401 (re-exported)

_MAIN = ("level", "trust_variant", "simple_threshold", "seed", "excluded_annotators")


class RunForm(forms.Form):
    """Start a run with some of the analysis settings changed; the rest come from the study."""

    MAIN = _MAIN
    REQUIRED = ("level", "trust_variant", "simple_threshold")
    # Every other setting (trust, bootstrap, every rule's parameters), by key path: the form
    # shows them under "More settings"; a new knob of AnalysisSettings appears here by itself.
    ADVANCED = tuple(path for path in knobs() if path not in _MAIN)
    FIELDS = MAIN + ADVANCED

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for path in self.FIELDS:
            self.fields[path] = settings_form_field(path, required=path in self.REQUIRED)

    def main_fields(self) -> list[forms.BoundField]:
        return [self[path] for path in self.MAIN]

    def advanced_fields(self) -> list[forms.BoundField]:
        return [self[path] for path in self.ADVANCED]

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
            value = _lookup(settings, name, _lookup(defaults, name, None))
            out[name] = value if knob(name).problem(value) is None else _lookup(defaults, name, None)
        return out

    def run_settings(self, *, base: AnalysisSettings) -> AnalysisSettings:
        """The run's settings object: ``base`` (the study's) with what the form changes; the
        object the run service takes, stores and the run reads back (no dict travels on)."""
        return AnalysisSettings.from_mapping(self.cleaned_data, base=base)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        # An empty field keeps the study's value (an optional setting cannot be emptied here).
        given = {name: value for name, value in cleaned.items()
                 if value is not None and value != "" and name in self.FIELDS}
        try:
            AnalysisSettings.from_mapping(_nested(given))
        except SettingsError as exc:
            for path, messages in exc.fields.items():
                for message in messages:  # every key path given is a field's name
                    self.add_error(path if path in self.fields else None, message)
        return _nested({name: value for name, value in given.items() if name not in self.errors})


def _lookup(settings: Mapping[str, Any], path: str, default: Any) -> Any:
    node: Any = settings
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return default
        node = node[part]
    return node


def _nested(flat: Mapping[str, Any]) -> dict[str, Any]:
    """``{"quality.too_fast.floor_s": 2}`` → ``{"quality": {"too_fast": {"floor_s": 2}}}``."""
    out: dict[str, Any] = {}
    for path, value in flat.items():
        *parents, name = path.split(".")
        node = out
        for part in parents:
            node = node.setdefault(part, {})
        node[name] = value
    return out
