"""The judges page's form: a judge (new, or one of the study's by name) and a file of its
answers."""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from core.judges import DEFAULT_RUN, MAX_NAME


class JudgeUploadForm(forms.Form):
    name = forms.CharField(label=_("Judge"), max_length=MAX_NAME,
                           help_text=_("A new name adds a judge; an existing one adds runs to "
                                       "it."))
    model = forms.CharField(label=_("Model"), max_length=200, required=False,
                            help_text=_("e.g. gpt-4o-mini-2024-07-18"))
    prompt = forms.CharField(label=_("Prompt"), max_length=20_000, required=False,
                             widget=forms.Textarea(attrs={"rows": 3}),
                             help_text=_("The prompt's text or its version label."))
    version = forms.CharField(label=_("Version"), max_length=200, required=False)
    date = forms.DateField(label=_("Date"), required=False,
                           widget=forms.DateInput(attrs={"type": "date"}))
    temperature = forms.FloatField(label=_("Temperature"), required=False, min_value=0,
                                   max_value=10)
    notes = forms.CharField(label=_("Notes"), max_length=20_000, required=False,
                            widget=forms.Textarea(attrs={"rows": 2}))
    run = forms.CharField(label=_("Run"), max_length=MAX_NAME, initial=DEFAULT_RUN,
                          help_text=_("Labels the rows without a run column."))
    replace = forms.BooleanField(label=_("Replace a run the judge already has"),
                                 required=False)
    file = forms.FileField(label=_("Answers file"),
                           help_text=_("CSV, TSV or semicolon-separated: item,value or "
                                       "items,choice, optionally question, run, rationale"))

    def metadata(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {"model": data["model"], "prompt": data["prompt"], "version": data["version"],
                "date": data["date"].isoformat() if data["date"] else "",
                "temperature": data["temperature"], "notes": data["notes"]}
