"""Forms of the researcher's response-import page."""

from __future__ import annotations

from django import forms


class ResponseImportForm(forms.Form):
    file = forms.FileField(help_text="CSV or TSV, UTF-8 (with or without BOM).")
    format = forms.ChoiceField(
        choices=[("wide", "Wide: one row per annotator, one column per item (Google Forms); "
                           "item:question columns when the study asks several questions"),
                 ("long", "Long: annotator, item, value[, question, missing, comment, "
                          "duration_ms, position] (Concord's responses export reads back)")],
        widget=forms.RadioSelect, initial="wide")
    annotator_column = forms.CharField(
        max_length=500, required=False,
        help_text="Wide: the column holding the annotator id, e.g. Email address.")
    item_map = forms.FileField(required=False, help_text="CSV column,item (wide headers → item ids).")
    value_map = forms.FileField(required=False, help_text="CSV label,value (option labels → values).")
    meta_columns = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Columns kept as participant metadata, one per line.")

    def clean_meta_columns(self) -> list[str]:
        return [line.strip() for line in self.cleaned_data["meta_columns"].splitlines()
                if line.strip()]
