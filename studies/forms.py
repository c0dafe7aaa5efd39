import json
import re
from typing import Any

from django import forms
from django.conf import settings
from django.contrib.auth.forms import UserCreationForm
from django.template.defaultfilters import filesizeformat

from core.comparative import DEFAULTS as COMPARATIVE_DEFAULTS
from core.comparative import is_comparative
from core.settings import Knob, knob, knobs
from core.text import first_bad_text

from .definitions import refuse_reserved_slug
from .models import Membership, Question, Study
from .presets import preset_names, scale_preset_names


class StudyCreateForm(forms.Form):
    slug = forms.SlugField(max_length=60, help_text="Lower-case letters, digits and dashes; used in URLs.",
                           validators=[refuse_reserved_slug])
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
    source_order = forms.ChoiceField(
        label="Outputs of one source", choices=Study.SourceOrder.choices,
        initial=Study.SourceOrder.SPREAD, required=False,
        help_text="For items that name a source: spread apart, or one after "
                  "the other.")
    instructions = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), required=False,
                                   help_text="Markdown.")
    consent = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False,
                              help_text="Markdown.")


class ItemUploadForm(forms.Form):
    file = forms.FileField(help_text="CSV or JSONL: id, text or text_a/text_b, control, "
                                     "system, source, metric:*, feature:*, meta:*")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["file"].help_text += (
            f". Up to {filesizeformat(settings.CONCORD_MAX_UPLOAD_BYTES)}; a file over "
            f"{filesizeformat(settings.CONCORD_IMPORT_SYNC_MAX_BYTES)} is imported in the "
            "background, with a page showing its progress.")


class SystemScoresForm(forms.Form):
    """A `system,metric,value` file of system-level metric scores (docs/systems.md)."""

    file = forms.FileField(label="Scores file",
                           help_text="CSV with the columns system, metric, value: one row per "
                                     "system and metric")


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


class ComparisonsForm(forms.Form):
    """The items page's "Build comparisons" (`studies.services.comparisons_generate`)."""

    kind = forms.ChoiceField(label="Design", widget=forms.RadioSelect, initial="pairs", choices=[
        ("pairs", "Pairs: every pair of a source's outputs"),
        ("tuples", "Best–worst tuples: every output in about as many tuples")])
    per_pair = forms.IntegerField(label="Comparisons per pair", min_value=1, max_value=50,
                                  initial=1, required=False,
                                  help_text="Pairs: 1 compares each pair once.")
    size = forms.IntegerField(label="Outputs per tuple", min_value=3, max_value=8, initial=4,
                              required=False, help_text="Tuples: 4 usually.")
    n_tuples = forms.IntegerField(label="Tuples per source", min_value=1, max_value=10_000,
                                  required=False,
                                  help_text="Tuples: empty builds twice as many tuples as the "
                                            "source has outputs (2N).")
    seed = forms.IntegerField(initial=0, min_value=-2**62, max_value=2**62,
                              help_text="The same seed builds the same design.")
    replace = forms.BooleanField(required=False, widget=forms.HiddenInput)

    def arguments(self) -> dict[str, Any]:
        """The service's keyword arguments."""
        data = self.cleaned_data
        return {"kind": data["kind"], "per_pair": data["per_pair"] or 1,
                "size": data["size"] or 4, "n_tuples": data["n_tuples"], "seed": data["seed"]}


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


class MemberInviteForm(forms.Form):
    email = forms.EmailField(label="E-mail address", max_length=254)
    role = forms.ChoiceField(label="Role", choices=Membership.Role.choices,
                             initial=Membership.Role.VIEWER)


class SignupForm(UserCreationForm):
    """User name, e-mail address and password (twice, checked by AUTH_PASSWORD_VALIDATORS)."""

    class Meta(UserCreationForm.Meta):
        fields = ("username", "email")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["email"].required = True
        for name, label in (("username", "User name"), ("email", "E-mail address"),
                            ("password2", "Password again")):
            self.fields[name].label = label


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
    if spec.kind == "bool":  # a choice, not a box: an unticked box could not say "not given"
        # "False"/"True": what str() of the initial value is, so the select shows it
        return forms.TypedChoiceField(choices=[("False", "no"), ("True", "yes")],
                                      coerce=lambda v: v in (True, "True"),
                                      empty_value=None, **common)
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


CUSTOM = "custom"
# The options each comparative kind's form shows and reads (core.comparative.DEFAULTS).
COMPARISON_OPTIONS = {kind: tuple(options) for kind, options in COMPARATIVE_DEFAULTS.items()}


def _number(value: Any) -> str:
    number = float(value)
    return str(int(number)) if number.is_integer() else repr(number)


class QuestionForm(forms.Form):
    """One question of the settings page: what a definition file's question table holds.

    The scale is a preset or a custom one (its values, one label per value, an optional
    reductions table in JSON); the rubric is Markdown (for a preset, empty keeps the preset's
    rating guide). `definition()` returns the question table `studies.definitions` reads, so the
    service checks it like any definition (keys, values, reductions).
    """

    key = forms.CharField(max_length=40, help_text="Lower-case letters, digits, - or _; "
                                                   "the column name in exports.")
    prompt = forms.CharField(max_length=500, required=False,
                             help_text="The question as annotators read it.")
    kind = forms.ChoiceField(label="Kind", choices=Question.Kind.choices,
                             initial=Question.Kind.SCALE, required=False,
                             help_text="A rating scale, or a comparison of outputs: the better "
                                       "of two, a ranking, or the best and the worst.")
    scale = forms.ChoiceField(choices=[], required=False,
                              help_text="A preset, or a custom scale below.")
    # A comparative question's options (core.comparative.options_clean); the page shows those
    # of the chosen kind (static/js/question-kind.js), the server reads only those.
    ties = forms.BooleanField(label="Ties allowed", required=False,
                              help_text="Pairwise and ranking: the annotator may say two are "
                                        "equal.")
    strength = forms.BooleanField(label="Ask how much better", required=False,
                                  help_text="Pairwise: “slightly” or “much” better.")
    size = forms.IntegerField(label="Outputs per tuple", required=False, min_value=3,
                              max_value=8, initial=4,
                              help_text="Best–worst: outputs compared at once (4 usually).")
    values = forms.CharField(label="Custom scale: values", required=False, max_length=2000,
                             help_text="Numbers in order, separated by commas: 1, 2, 3, 4, 5.")
    labels = forms.CharField(label="Custom scale: labels", required=False, max_length=20_000,
                             widget=forms.Textarea(attrs={"rows": 4}),
                             help_text="One per line: value = label (e.g. 1 = Not at all).")
    reductions = forms.CharField(label="Custom scale: reductions (JSON, optional)",
                                 required=False, max_length=20_000,
                                 widget=forms.Textarea(attrs={"rows": 2, "spellcheck": "false",
                                                              "class": "code"}),
                                 help_text='Named mappings of every value to a code: '
                                           '{"binary": {"1": 0, "2": 0, "3": 1}}.')
    rubric = forms.CharField(required=False, strip=False, max_length=100_000,
                             widget=forms.Textarea(attrs={"rows": 4}),
                             help_text="Rating guide (Markdown). With a preset, empty keeps the "
                                       "preset's guide.")
    required = forms.BooleanField(required=False, initial=True,
                                  help_text="An answer is needed to continue.")
    comment = forms.BooleanField(label="Comment box", required=False)
    cant_judge = forms.BooleanField(label="“Can't judge” option", required=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["scale"].choices = [("", "— choose —"),
                                        *((name, name) for name in scale_preset_names()),
                                        (CUSTOM, "Custom scale")]

    @staticmethod
    def initial_of(question: dict[str, Any]) -> dict[str, Any]:
        """The form's initial values from one question of `study_definition`."""
        scale = question.get("scale")
        out: dict[str, Any] = {"key": question.get("key", ""),
                               "prompt": question.get("prompt", ""),
                               "kind": question.get("kind", "scale"),
                               "required": question.get("required", True),
                               "comment": question.get("comment", False),
                               "cant_judge": question.get("cant_judge", False),
                               "rubric": question.get("rubric", "")}
        options = question.get("options")
        if isinstance(options, dict):
            out.update({k: v for k, v in options.items() if k in ("ties", "strength", "size")})
        if isinstance(scale, str):
            out["scale"] = scale
        elif isinstance(scale, dict):
            values = scale.get("values") or []
            labels = scale.get("labels") or {}
            out.update(scale=CUSTOM, values=", ".join(_number(v) for v in values),
                       labels="\n".join(f"{k} = {v}" for k, v in labels.items()),
                       reductions=json.dumps(scale["reductions"], ensure_ascii=False)
                       if scale.get("reductions") else "",
                       rubric=scale.get("rubric", "") or question.get("rubric", ""))
        return out

    def clean_values(self) -> list[float | int]:
        text = self.cleaned_data["values"].strip()
        out: list[float | int] = []
        for part in re.split(r"[\s,;]+", text) if text else []:
            try:
                number = float(part)
            except ValueError:
                raise forms.ValidationError(f"{part!r} is not a number") from None
            if number != number or number in (float("inf"), float("-inf")):
                raise forms.ValidationError(f"{part!r} is not a finite number")
            out.append(int(number) if number.is_integer() else number)
        return out

    def clean_labels(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for n, line in enumerate(self.cleaned_data["labels"].splitlines(), start=1):
            if not line.strip():
                continue
            value, sep, label = line.partition("=")
            if not sep:
                raise forms.ValidationError(f"line {n}: write value = label")
            try:
                out[_number(value.strip())] = label.strip()
            except ValueError:
                raise forms.ValidationError(f"line {n}: {value.strip()!r} is not a number"
                                            ) from None
        return out

    def clean_reductions(self) -> Any:
        text = self.cleaned_data["reductions"].strip()
        if not text:
            return {}
        try:
            reductions = json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            raise forms.ValidationError("not valid JSON") from None
        _refuse_bad_text(reductions, "reductions")
        return reductions

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        data["kind"] = data.get("kind") or Question.Kind.SCALE
        if is_comparative(data["kind"]):
            # The scale's fields are hidden for a comparative question: whatever they hold is
            # not read (nor checked).
            for name in ("values", "labels", "reductions", "scale", "ties", "strength", "size"):
                if name not in COMPARISON_OPTIONS[data["kind"]]:
                    self.errors.pop(name, None)
            if data["kind"] == Question.Kind.BWS and data.get("size") is None \
                    and "size" not in self.errors:
                data["size"] = 4
            return data
        self.errors.pop("size", None)
        if not data.get("scale"):
            self.add_error("scale", "choose a scale (a preset or custom)")
        if data.get("scale") == CUSTOM and len(data.get("values") or []) < 2:
            self.add_error("values", "a custom scale needs at least two values")
        values = {_number(v) for v in data.get("values") or []}
        stray = sorted(set(data.get("labels") or {}) - values)
        if data.get("scale") == CUSTOM and stray and "values" not in self.errors:
            self.add_error("labels", f"no such value on the scale: {', '.join(stray)}")
        return data

    def definition(self) -> dict[str, Any]:
        """The question table of a definition file (`studies.definitions`)."""
        data = self.cleaned_data
        out: dict[str, Any] = {"key": data["key"], "prompt": data["prompt"],
                               "required": data["required"], "comment": data["comment"],
                               "cant_judge": data["cant_judge"]}
        kind = data.get("kind") or Question.Kind.SCALE
        if is_comparative(kind):
            out["kind"] = kind
            out["options"] = {name: data[name] for name in COMPARISON_OPTIONS[kind]}
            if data["rubric"].strip():
                out["rubric"] = data["rubric"]
            return out
        if data["scale"] == CUSTOM:
            out["scale"] = {"values": data["values"], "labels": data["labels"],
                            "rubric": data["rubric"], "reductions": data["reductions"]}
        else:
            out["scale"] = data["scale"]
            if data["rubric"].strip():
                out["rubric"] = data["rubric"]
        return out


class BaseQuestionFormSet(forms.BaseFormSet):
    def clean(self) -> None:
        if any(self.errors):
            return
        keys = [f.cleaned_data["key"] for f in self.forms
                if f.cleaned_data and not self._should_delete_form(f)]
        if not keys:
            raise forms.ValidationError("a study needs at least one question")
        if len(set(keys)) != len(keys):
            raise forms.ValidationError("each question needs its own key")

    def definitions(self) -> list[dict[str, Any]]:
        return [f.definition() for f in self.forms
                if f.cleaned_data and not self._should_delete_form(f)]


# absolute_max: Django builds min(TOTAL_FORMS, absolute_max) forms before validating, and its
# default is max_num + 1000 — a posted TOTAL_FORMS=100000 built 1 020 forms in 16 s. At 20, such
# a post costs 20 forms and says "at most 20".
QuestionFormSet = forms.formset_factory(QuestionForm, formset=BaseQuestionFormSet, extra=1,
                                        can_delete=True, max_num=20, absolute_max=20,
                                        validate_max=True)


def _refuse_bad_text(parsed: Any, name: str) -> None:
    """A form error for a NUL or a lone surrogate (``"\\u0000"``) in a JSON field's text:
    neither can be stored (core.text)."""
    bad = first_bad_text(parsed, name)
    if bad:
        raise forms.ValidationError(f"{bad[0]} {bad[1]}")


class StudySettingsForm(forms.Form):
    """Everything a definition file holds but the slug: texts, language, display, questions (one
    `QuestionForm` each, in ``formset``; or, for advanced use, the definition's JSON list),
    design, and every analysis setting (one field per `Knob`). Once the study has been opened,
    only the fields of `OPEN_EDITABLE` are enabled.

    The questions come from the JSON when ``questions_json`` is ticked, or when the post has no
    question forms at all (a script posting the JSON, as before the forms existed); a JSON
    edited without the tick is an error, never silently dropped."""

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
    completion_text = forms.CharField(label="Completion text", required=False, strip=False,
                                      max_length=20_000,
                                      widget=forms.Textarea(attrs={"rows": 4}),
                                      help_text="Markdown, shown on the last page with the "
                                                "completion code (empty: a short thank-you).")
    show_gold = forms.BooleanField(label="Show the gold annotation (coreference)", required=False)
    questions = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 14, "spellcheck": "false", "class": "code"}),
        help_text="The questions as a definition file lists them (JSON): key, prompt, scale (a "
                  "scale preset's name or values/labels/rubric/reductions), required, comment, "
                  "cant_judge.")
    questions_json = forms.BooleanField(
        label="Use this JSON for the questions instead of the forms above", required=False)
    items_per_participant = forms.IntegerField(min_value=0, help_text="0 = every item.")
    annotators_per_item = forms.IntegerField(min_value=1)
    duplicates = forms.IntegerField(min_value=0, help_text="Repeated items per participant.")
    duplicate_min_gap = forms.IntegerField(min_value=2)
    seed = forms.IntegerField(label="Design seed")
    source_order = forms.ChoiceField(
        label="Outputs of one source", choices=Study.SourceOrder.choices,
        help_text="For items that name a source: spread apart in each annotator's order, or one "
                  "after the other (the sources' order and the order within each shuffled per "
                  "annotator with the design seed).")

    TEXT = ("title", "language", "display", "consent", "instructions", "completion_text",
            "completion_url", "show_gold")
    DESIGN = ("items_per_participant", "annotators_per_item", "duplicates", "duplicate_min_gap",
              "seed", "source_order")
    OPEN = ("title", "consent", "instructions", "completion_text", "completion_url")

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
        self.current_questions = definition["questions"]
        with_forms = self.is_bound and "q-TOTAL_FORMS" in self.data and draft
        self.formset = QuestionFormSet(self.data if with_forms else None, prefix="q",
                                       initial=[QuestionForm.initial_of(q)
                                                for q in definition["questions"]])
        self.with_forms = with_forms
        for path, spec in knobs().items():
            self.fields[_field_name(path)] = settings_form_field(
                path, required=not spec.optional and spec.kind != "pseudonyms")
        self.draft = draft
        if not draft:
            for name, field in self.fields.items():
                if name not in self.OPEN and not name.startswith("a__"):
                    field.disabled = True
            self.disable_questions()

    def disable_questions(self) -> None:
        """Show the question forms read-only (an opened study, or a reader)."""
        for form in [*self.formset.forms, self.formset.empty_form]:
            for field in form.fields.values():
                field.disabled = True

    def is_valid(self) -> bool:
        valid = super().is_valid()
        if self.draft and not self.uses_json():
            valid = self.formset.is_valid() and valid
        return valid

    def uses_json(self) -> bool:
        """Whether the posted questions are the JSON's (see the class docstring)."""
        return not self.with_forms or bool(self.data.get("questions_json"))

    def sections(self) -> list[tuple[str, list[forms.BoundField] | None]]:
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
                ("Questions and scales", None),  # the question forms, drawn by the template
                ("Design", [self[n] for n in self.DESIGN]),
                ("Analysis", general),
                *((f"Heuristic: {name.replace('_', ' ')}", fields)
                  for name, fields in heuristics.items())]

    def clean_questions(self) -> Any:
        text = self.cleaned_data["questions"]
        if not text.strip():
            if self.draft and self.is_bound and self.uses_json():
                raise forms.ValidationError("the questions' JSON is empty")
            return None
        try:
            questions = json.loads(text)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(f"not valid JSON: {exc.msg} (line {exc.lineno}, "
                                        f"column {exc.colno})") from None
        except RecursionError:
            raise forms.ValidationError("not valid JSON: nested too deeply") from None
        _refuse_bad_text(questions, "questions")
        if self.draft and not self.uses_json() and questions != self.current_questions:
            raise forms.ValidationError(
                "you edited the questions' JSON: tick “Use this JSON…” to apply it, or undo it")
        return questions

    def changes(self) -> dict[str, Any]:
        """The cleaned values as a partial definition (the enabled fields only)."""
        data = self.cleaned_data
        out: dict[str, Any] = {n: data[n] for n in self.TEXT if not self.fields[n].disabled}
        if self.draft:
            out["questions"] = (data["questions"] if self.uses_json()
                                else self.formset.definitions())
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
            if self.draft and not self.uses_json() and self._question_problem(name, message):
                return
            name = "questions"
        name = {"consent_text": "consent"}.get(name, name)
        if name in self.fields and not self.fields[name].disabled:
            self.add_error(name, message)
        else:
            self.add_error(None, f"{column}: {message}" if column else message)


    def _question_problem(self, column: str, message: str) -> bool:
        """Show ``questions[1].scale.values``'s problem at that question form's field."""
        match = re.match(r"questions\[(\d+)\]\.?([a-z_]+)?\.?([a-z_]+)?", column)
        live = [f for f in self.formset.forms
                if f.cleaned_data and not self.formset._should_delete_form(f)]
        if not match or int(match[1]) >= len(live):
            return False
        form = live[int(match[1])]
        field = (match[3] if match[2] in ("scale", "options") and match[3] in form.fields
                 else match[2])
        form.add_error(field if field in form.fields else None, message)
        return True


class DefinitionUploadForm(forms.Form):
    file = forms.FileField(label="Definition file",
                           help_text="JSON or TOML, as the create_study --definition command reads it.")


class CloneForm(forms.Form):
    slug = forms.SlugField(max_length=60, label="New slug",
                           help_text="Lower-case letters, digits and dashes; used in URLs.",
                           validators=[refuse_reserved_slug])
    title = forms.CharField(max_length=200, required=False,
                            help_text="Empty: the title followed by “(copy)”.")
