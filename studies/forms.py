from django import forms
from django.conf import settings

from .models import Membership
from .presets import preset_names


class StudyCreateForm(forms.Form):
    slug = forms.SlugField(max_length=60, help_text="Lower-case letters, digits and dashes; used in URLs.")
    title = forms.CharField(max_length=200)
    preset = forms.ChoiceField(choices=[(p, p) for p in preset_names()])
    language = forms.ChoiceField(choices=settings.LANGUAGES, initial="en")
    items_per_participant = forms.IntegerField(min_value=0, initial=0,
                                               help_text="0 = every item.")
    annotators_per_item = forms.IntegerField(min_value=1, initial=3)
    duplicates = forms.IntegerField(min_value=0, initial=0,
                                    help_text="Items each annotator sees twice.")
    duplicate_min_gap = forms.IntegerField(min_value=2, initial=5,
                                           help_text="Positions between an item and its repeat.")
    seed = forms.IntegerField(initial=0)
    instructions = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), required=False,
                                   help_text="Markdown.")
    consent = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False,
                              help_text="Markdown.")


class ItemUploadForm(forms.Form):
    file = forms.FileField(help_text="CSV or JSONL: id, text or text_a/text_b, control, "
                                     "metric:*, feature:*, meta:*")


class InviteForm(forms.Form):
    count = forms.IntegerField(min_value=1, max_value=1000, initial=1)
    label = forms.CharField(max_length=200, required=False)


class ControlsForm(forms.Form):
    n = forms.IntegerField(label="Control pairs", min_value=1, max_value=1000, initial=5)
    seed = forms.IntegerField(required=False, help_text="Blank: the study's seed.")


class DeleteStudyForm(forms.Form):
    confirm_slug = forms.CharField(label="Type the study's slug to confirm", max_length=60)


class ItemEditForm(forms.Form):
    """The editable fields of an item; the view drops those its study's display has not."""

    text = forms.CharField(widget=forms.Textarea(attrs={"rows": 8}), required=False,
                           strip=False)
    text_a = forms.CharField(label="Sentence A", widget=forms.Textarea(attrs={"rows": 3}),
                             required=False, strip=False)
    text_b = forms.CharField(label="Sentence B", widget=forms.Textarea(attrs={"rows": 3}),
                             required=False, strip=False)
    is_control = forms.BooleanField(label="Control item", required=False)


class MemberAddForm(forms.Form):
    username = forms.CharField(label="User name", max_length=150)
    role = forms.ChoiceField(label="Role", choices=Membership.Role.choices,
                             initial=Membership.Role.VIEWER)


class MemberRoleForm(forms.Form):
    role = forms.ChoiceField(label="Role", choices=Membership.Role.choices)
