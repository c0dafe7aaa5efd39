import json
import re
from typing import Any

from django import forms
from django.conf import settings

from core.settings import Knob, knob, knobs

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


class CorefUploadForm(forms.Form):
    """A gold and a system coreference file: one item per document, metrics on import."""

    gold = forms.FileField(label="Gold annotation",
                           help_text="CoNLL-2012 or RuCoCo JSON: one document per item.")
    system = forms.FileField(label="System annotation", help_text="The same documents, same format.")
    format = forms.ChoiceField(label="Format", choices=[("conll2012", "CoNLL-2012"),
                                                        ("rucoco-json", "RuCoCo JSON")])


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


def settings_form_field(path: str, *, required: bool = False) -> forms.Field:
    """Return the form field of one setting (by key path), as its `Knob` describes it.

    A field left empty keeps the study's value; a choice always has one selected.
    """
    spec: Knob = knob(path)
    common = {"label": spec.label, "help_text": spec.help, "required": required}
    if spec.kind == "choice":
        labels = spec.choice_labels or {}
        return forms.ChoiceField(choices=[(c, labels.get(c, c)) for c in spec.choices], **common)
    if spec.kind == "int":
        return forms.IntegerField(min_value=spec.low, max_value=spec.high, **common)
    if spec.kind == "float":
        return forms.FloatField(min_value=spec.low, max_value=spec.high, **common)
    return PseudonymsField(**common)


class PseudonymsField(forms.CharField):
    """Pseudonyms typed as ``A3, A7`` (commas or spaces); cleaned to a list, checked by the Knob."""

    def to_python(self, value: Any) -> list[str]:
        text = super().to_python(value)
        return [name.upper() for name in re.split(r"[\s,;]+", text) if name]

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, (list, tuple)):
            return ", ".join(value)
        return value


def _field_name(path: str) -> str:
    return "a__" + path.replace(".", "__")


class StudySettingsForm(forms.Form):
    """Everything a definition file holds but the slug: texts, language, display, questions (as
    the definition's JSON list), design, and every analysis setting (one field per `Knob`).
    Once the study has been opened, only the fields of `OPEN_EDITABLE` are enabled."""

    title = forms.CharField(max_length=200)
    language = forms.ChoiceField(choices=settings.LANGUAGES)
    display = forms.ChoiceField(choices=[("text", "Text"), ("pair", "Pair of sentences"),
                                         ("coref", "Coreference")])
    consent = forms.CharField(label="Consent text", required=False, strip=False,
                              widget=forms.Textarea(attrs={"rows": 5}),
                              help_text="Markdown, shown before the instructions.")
    instructions = forms.CharField(required=False, strip=False,
                                   widget=forms.Textarea(attrs={"rows": 6}),
                                   help_text="Markdown, shown before the first item.")
    completion_url = forms.URLField(label="Completion URL", required=False, max_length=200,
                                    assume_scheme="https",
                                    help_text="Where a finished annotator is sent, e.g. "
                                              "Prolific's completion URL.")
    show_gold = forms.BooleanField(label="Show the gold annotation (coreference)", required=False)
    questions = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 14, "spellcheck": "false", "class": "code"}),
        help_text="The questions as a definition file lists them (JSON): key, prompt, scale (a "
                  "scale preset's name or values/labels/rubric/reductions), required, comment, "
                  "cant_judge.")
    items_per_participant = forms.IntegerField(min_value=0, help_text="0 = every item.")
    annotators_per_item = forms.IntegerField(min_value=1)
    duplicates = forms.IntegerField(min_value=0, help_text="Repeated items per participant.")
    duplicate_min_gap = forms.IntegerField(min_value=2)
    seed = forms.IntegerField(label="Design seed")

    TEXT = ("title", "language", "display", "consent", "instructions", "completion_url",
            "show_gold")
    DESIGN = ("items_per_participant", "annotators_per_item", "duplicates", "duplicate_min_gap",
              "seed")
    OPEN = ("title", "consent", "instructions", "completion_url")

    def __init__(self, *args: Any, definition: dict[str, Any], draft: bool,
                 **kwargs: Any) -> None:
        analysis = definition["analysis"]
        initial = {k: definition[k] for k in self.TEXT}
        initial.update(definition["design"])
        initial["questions"] = json.dumps(definition["questions"], indent=2, ensure_ascii=False)
        for path in knobs():
            value: Any = analysis
            for part in path.split("."):
                value = value.get(part) if isinstance(value, dict) else None
            initial[_field_name(path)] = value
        super().__init__(*args, initial=initial, **kwargs)
        for path, spec in knobs().items():
            self.fields[_field_name(path)] = settings_form_field(
                path, required=not spec.optional and spec.kind != "pseudonyms")
        self.draft = draft
        if not draft:
            for name, field in self.fields.items():
                if name not in self.OPEN and not name.startswith("a__"):
                    field.disabled = True

    def sections(self) -> list[tuple[str, list[forms.BoundField]]]:
        """The fields grouped as the page shows them."""
        heuristics: dict[str, list[forms.BoundField]] = {}
        general = []
        for path in knobs():
            bound = self[_field_name(path)]
            if path.startswith("heuristics."):
                heuristics.setdefault(path.split(".")[1], []).append(bound)
            else:
                general.append(bound)
        return [("Texts", [self[n] for n in self.TEXT]),
                ("Questions and scales", [self["questions"]]),
                ("Design", [self[n] for n in self.DESIGN]),
                ("Analysis", general),
                *((f"Heuristic: {name.replace('_', ' ')}", fields)
                  for name, fields in heuristics.items())]

    def clean_questions(self) -> Any:
        try:
            return json.loads(self.cleaned_data["questions"])
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(f"not valid JSON: {exc.msg} (line {exc.lineno}, "
                                        f"column {exc.colno})") from None
        except RecursionError:
            raise forms.ValidationError("not valid JSON: nested too deeply") from None

    def changes(self) -> dict[str, Any]:
        """The cleaned values as a partial definition (the enabled fields only)."""
        data = self.cleaned_data
        out: dict[str, Any] = {n: data[n] for n in self.TEXT if not self.fields[n].disabled}
        if self.draft:
            out["questions"] = data["questions"]
            out["design"] = {n: data[n] for n in self.DESIGN}
        analysis: dict[str, Any] = {}
        for path in knobs():
            target = analysis
            *parents, leaf = path.split(".")
            for part in parents:
                target = target.setdefault(part, {})
            target[leaf] = data.get(_field_name(path))
        out["analysis"] = analysis
        return out

    def add_problem(self, column: str | None, message: str) -> None:
        """Show a service's problem at its field (``analysis.x.y`` at that setting's)."""
        name = column or ""
        if name.startswith("analysis."):
            name = _field_name(name.removeprefix("analysis."))
        elif name.startswith("design."):
            name = name.removeprefix("design.").replace("duplicates_per_participant",
                                                        "duplicates")
        elif name.startswith("questions"):
            name = "questions"
        name = {"consent_text": "consent"}.get(name, name)
        if name in self.fields and not self.fields[name].disabled:
            self.add_error(name, message)
        else:
            self.add_error(None, f"{column}: {message}" if column else message)


class DefinitionUploadForm(forms.Form):
    file = forms.FileField(label="Definition file",
                           help_text="JSON or TOML, as the create_study --definition command reads it.")


class CloneForm(forms.Form):
    slug = forms.SlugField(max_length=60, label="New slug",
                           help_text="Lower-case letters, digits and dashes; used in URLs.")
    title = forms.CharField(max_length=200, required=False,
                            help_text="Empty: the title followed by “(copy)”.")
