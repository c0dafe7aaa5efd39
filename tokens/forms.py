from django import forms

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
