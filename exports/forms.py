"""Forms of the exports app: the upload of a methods bundle to replay."""

from django import forms


class BundleImportForm(forms.Form):
    file = forms.FileField(label="Methods bundle (zip)",
                           help_text="The zip the study's bundle export writes "
                                     "(…-bundle.zip).")
    slug = forms.SlugField(max_length=60, required=False, label="New slug",
                           help_text="Lower-case letters, digits and dashes. Empty: the "
                                     "bundle's own slug, if no study has it.")
