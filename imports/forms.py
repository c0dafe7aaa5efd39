"""Forms of the imports: the response-import page and the upload of a methods bundle to replay."""

from __future__ import annotations

from django import forms
from django.conf import settings


class ResponseImportForm(forms.Form):
    file = forms.FileField(help_text="CSV or TSV, UTF-8 (with or without BOM).")
    format = forms.ChoiceField(
        choices=[("wide", "Wide: one row per annotator, one column per item (Google Forms); "
                           "item:question columns when the study asks several questions"),
                 ("long", "Long: annotator, item, value[, question, missing, comment, "
                          "duration_ms, position] (Concord's responses export reads back)"),
                 ("judgments", "Comparative judgments: annotator, items, choice[, question, "
                               "comment] — items the outputs shown, in order, separated by | "
                               "(the judgments export reads back)")],
        widget=forms.RadioSelect, initial="wide")
    annotator_column = forms.CharField(
        max_length=500, required=False,
        help_text="Wide: the column holding the annotator id, e.g. Email address.")
    item_map = forms.FileField(required=False, help_text="CSV column,item (wide headers → item ids).")
    value_map = forms.FileField(required=False, help_text="CSV label,value (option labels → values).")
    meta_columns = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Columns kept as participant metadata, one per line.")

    @property
    def sync_max(self) -> int:
        """The size over which a file is imported by a background job (the page says it)."""
        return settings.CONCORD_IMPORT_SYNC_MAX_BYTES

    @property
    def upload_max(self) -> int:
        return settings.CONCORD_MAX_UPLOAD_BYTES

    def clean_meta_columns(self) -> list[str]:
        return [line.strip() for line in self.cleaned_data["meta_columns"].splitlines()
                if line.strip()]


class BundleImportForm(forms.Form):
    file = forms.FileField(label="Methods bundle (zip)",
                           help_text="The zip the study's bundle export writes "
                                     "(…-bundle.zip).")
    slug = forms.SlugField(max_length=60, required=False, label="New slug",
                           help_text="Lower-case letters, digits and dashes. Empty: the "
                                     "bundle's own slug, if no study has it.")
