from typing import Any

from django import forms
from django.contrib.auth.models import User

from studies.selectors import study_list

from .models import AccessToken
from .services import EXPIRY_DAYS


class TokenCreateForm(forms.Form):
    name = forms.CharField(max_length=100, label="Name",
                           help_text="What the token is for, e.g. “analysis notebook”.")
    days = forms.TypedChoiceField(label="Expires after", coerce=int, initial=90,
                                  choices=[(d, f"{d} days") for d in EXPIRY_DAYS])
    scope = forms.ChoiceField(label="Can", choices=AccessToken.Scope.choices, initial="read",
                              required=False,
                              help_text="Read only: the API's reads (results, exports, lists); "
                                        "a script that changes studies needs read and write.")
    study = forms.ChoiceField(label="Study", required=False,
                              help_text="A token for one study reaches only that study: "
                                        "to it, your other studies do not exist.")

    def __init__(self, *args: Any, user: User, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        studies = study_list(user=user).order_by("title", "slug").values_list("slug", "title")
        field = self.fields["study"]
        assert isinstance(field, forms.ChoiceField)  # noqa: S101 - narrows the type for mypy
        field.choices = [("", "All my studies"),
                         *((slug, f"{title} ({slug})") for slug, title in studies)]
