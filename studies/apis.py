"""Researcher API: studies, items and participants, scoped by the caller's role in each study.

Views validate, call one service and serialize; a service's `InputError` becomes a 400 that
lists every problem (file, line, column, message), and nothing is written then.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.urls import reverse
from drf_spectacular.utils import (
    OpenApiParameter,
    extend_schema,
    extend_schema_field,
    inline_serializer,
)
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import Throttled, ValidationError
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from core.problems import Collector, InputError
from core.tabular import size_over_limit

from .accounts import invite_allowed
from .definitions import refuse_reserved_slug, validate_definition
from .models import Item, Membership, Participant, Question, Study, SystemScore
from .parsers import JSONParser
from .selectors import (
    Role,
    StudyScopedMixin,
    clean_query,
    item_filter,
    item_roles,
    quality_policy,
    study_definition,
    study_get,
    study_list,
    with_item_roles,
)
from .services import (
    comparisons_generate,
    item_delete,
    item_update,
    items_import,
    member_add,
    member_change,
    member_invite,
    member_remove,
    participant_delete,
    participant_exclude,
    participant_revoke,
    participants_invite,
    study_archive,
    study_clone,
    study_create_from_definition,
    study_delete,
    study_transition,
    study_update,
    system_scores_import,
)


def problems_response(exc: InputError) -> Response:
    """The 400 body of an `InputError`: every problem, and how many were left out."""
    return Response({"problems": [{"file": p.file, "line": p.line, "column": p.column,
                                   "message": p.message} for p in exc.problems],
                     "omitted": exc.omitted, "detail": exc.render(limit=5)},
                    status=status.HTTP_400_BAD_REQUEST)


PROBLEMS = inline_serializer("Problems", {
    "problems": serializers.ListField(child=serializers.DictField()),
    "omitted": serializers.IntegerField(), "detail": serializers.CharField()})


class QuestionSerializer(serializers.ModelSerializer):
    class Meta:
        model = Question
        fields = ["key", "position", "kind", "comparison", "prompt", "required",
                  "allow_comment", "allow_cant_judge", "preset", "values", "labels", "rubric",
                  "reductions"]
        extra_kwargs = {
            "kind": {"help_text": "scale, pairwise, ranking or bws (best–worst scaling); a "
                                  "comparative question is asked about the comparisons "
                                  "(docs/comparisons.md)."},
            "comparison": {"help_text": "A comparative question's options: ties and strength "
                                        "(pairwise), ties (ranking), size (bws); {} for a "
                                        "scale."},
        }


class QualityPolicySerializer(serializers.Serializer):
    """The screening pass mark and the attention-check policy (the definition's `quality`)."""

    screening_pass_share = serializers.FloatField(
        required=False, help_text="Share of screening items to get right (absent when a count "
                                  "is set).")
    screening_pass_count = serializers.IntegerField(
        required=False, help_text="Screening items to get right (absent: the share applies).")
    screened_out_url = serializers.URLField(required=False,
                                            help_text="Where a screened-out annotator is sent.")
    check_warn_after = serializers.IntegerField(
        help_text="The next page warns after this many failed attention checks (0: never).")
    check_stop_after = serializers.IntegerField(
        help_text="The annotator is stopped after this many failed attention checks (0: never).")


class StudySerializer(serializers.ModelSerializer):
    questions = QuestionSerializer(many=True, read_only=True)
    quality = serializers.SerializerMethodField()
    item_roles = serializers.SerializerMethodField()

    class Meta:
        model = Study
        fields = ["slug", "title", "status", "display", "language", "items_per_participant",
                  "annotators_per_item", "duplicates_per_participant", "duplicate_min_gap", "seed",
                  "source_order",
                  "analysis_settings", "created_at", "questions", "quality", "item_roles"]

    @extend_schema_field(QualityPolicySerializer)
    def get_quality(self, study: Study) -> dict[str, Any]:
        return quality_policy(study=study)

    @extend_schema_field(inline_serializer("ItemRoles", {
        "main": serializers.IntegerField(), "screening": serializers.IntegerField(),
        "check": serializers.IntegerField(), "output": serializers.IntegerField()}))
    def get_item_roles(self, study: Study) -> dict[str, int]:
        if hasattr(study, "n_role_main"):  # the list's annotation: no query per study
            return {role: getattr(study, f"n_role_{role}") for role in Item.Role.values}
        return item_roles(study=study)


class ItemSerializer(serializers.ModelSerializer):
    """An item as researchers see it: with its role and, for screening and check items, the
    known answers and tolerances (the annotator's pages never show these)."""

    id = serializers.CharField(source="external_id")
    role = serializers.ChoiceField(choices=Item.Role.choices, read_only=True,
                                   help_text="main, screening, check (attention check) or output (an "
                                             "output shown only inside comparisons).")
    gold = serializers.DictField(child=serializers.FloatField(), read_only=True,
                                 help_text="Known answer per question key (screening and check "
                                           "items; empty for main items).")
    tolerance = serializers.DictField(child=serializers.FloatField(), read_only=True,
                                      help_text="Accepted distance from the known answer per "
                                                "question key (0 when absent: exact).")
    check_at = serializers.IntegerField(read_only=True, allow_null=True,
                                        help_text="A check's place among the main items (1 = "
                                                  "before the first); null: a random place.")
    outputs = serializers.ListField(child=serializers.CharField(), read_only=True,
                                    help_text="A comparison's outputs (the ids of the items it "
                                              "compares, in its canonical order); empty for "
                                              "every other item (docs/comparisons.md).")

    class Meta:
        model = Item
        fields = ["id", "position", "role", "text", "text_a", "text_b", "is_control", "system",
                  "source", "metrics", "features", "meta", "gold", "tolerance", "check_at",
                  "outputs"]
        extra_kwargs = {
            "system": {"read_only": True,
                       "help_text": "The system that produced the item (docs/systems.md); "
                                    "empty: none."},
            "source": {"read_only": True,
                       "help_text": "The source (input document, segment or prompt) the item "
                                    "answers; empty: none. Items of one source form a block."},
        }


class ParticipantSerializer(serializers.ModelSerializer):
    pseudonym = serializers.CharField(read_only=True,
                                      help_text="A1, A2, … as in the results; empty before a "
                                                "first answer.")

    class Meta:
        model = Participant
        fields = ["id", "pseudonym", "source", "external_id", "label", "n_assigned", "n_answered",
                  "created_at", "consented_at", "completed_at", "revoked_at"]


class InvitedSerializer(ParticipantSerializer):
    """A new invitation: the participant and its single-person link (give it to one annotator)."""

    link = serializers.SerializerMethodField()

    class Meta(ParticipantSerializer.Meta):
        fields = [*ParticipantSerializer.Meta.fields, "link"]

    def get_link(self, participant: Participant) -> str:
        return self.context["request"].build_absolute_uri(
            reverse("annotation:consent", args=[participant.token]))


class InviteSerializer(serializers.Serializer):
    count = serializers.IntegerField(min_value=1, max_value=1000)
    label = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)


class UploadSerializer(serializers.Serializer):
    file = serializers.FileField(help_text="An item file (CSV, TSV or JSONL; see docs/commands.md).")


class CloneSerializer(serializers.Serializer):
    slug = serializers.SlugField(max_length=60, validators=[refuse_reserved_slug])
    title = serializers.CharField(max_length=200, required=False, allow_blank=True)


class ComparisonsSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["pairs", "tuples"], default="pairs",
                                   help_text="pairs: every pair of a source's outputs; tuples: "
                                             "best–worst tuples.")
    per_pair = serializers.IntegerField(min_value=1, max_value=50, default=1,
                                        help_text="Pairs: comparisons of each pair.")
    size = serializers.IntegerField(min_value=3, max_value=8, default=4,
                                    help_text="Tuples: outputs per tuple.")
    n_tuples = serializers.IntegerField(min_value=1, max_value=10_000, required=False,
                                        allow_null=True, default=None,
                                        help_text="Tuples per source (empty: twice its "
                                                  "outputs).")
    seed = serializers.IntegerField(min_value=-2**62, max_value=2**62, default=0)


class StudyViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = StudySerializer
    queryset = Study.objects.none()  # typed for the schema; get_queryset scopes to the role
    lookup_field = "slug"

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return Study.objects.none()
        return with_item_roles(study_list(user=self.request.user))

    @extend_schema(
        request=inline_serializer("Definition", {"slug": serializers.CharField(),
                                                 "title": serializers.CharField()}),
        responses={201: StudySerializer, 400: PROBLEMS},
        description="Create a draft study from a definition: the same JSON object as a definition "
                    "file (docs/commands.md#study-definition-files). The caller becomes its owner.")
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        if not isinstance(request.data, dict):
            raise ValidationError({"detail": "send the definition as a JSON object"})
        errors = Collector("definition")
        try:
            definition = validate_definition(dict(request.data), errors)
            study = study_create_from_definition(owner=request.user, definition=definition)
        except InputError as exc:
            return problems_response(exc)
        study = study_get(user=request.user, slug=study.slug)
        return Response(StudySerializer(study).data, status=status.HTTP_201_CREATED)

    def _change(self, slug: str, need: str, change: Any) -> Response:
        study = study_get(user=self.request.user, slug=slug, need=need)
        try:
            change(study)
        except InputError as exc:
            return problems_response(exc)
        return Response(StudySerializer(study_get(user=self.request.user, slug=slug)).data)

    @extend_schema(
        request=inline_serializer("SettingsChange", {
            "title": serializers.CharField(required=False),
            "instructions": serializers.CharField(required=False),
            "consent": serializers.CharField(required=False),
            "completion_url": serializers.CharField(required=False),
            "analysis": serializers.DictField(required=False)}),
        responses={200: StudySerializer, 400: PROBLEMS},
        description="Change the study's settings: any key of a definition file but `slug` "
                    "(`design` and `analysis` may be partial). Anything while a draft; once "
                    "opened only title, instructions, consent, completion_url and analysis. "
                    "Recorded with the changed fields. Editor.")
    def partial_update(self, request: Request, slug: str) -> Response:
        if not isinstance(request.data, dict):
            raise ValidationError({"detail": "send the changes as a JSON object"})
        changes = dict(request.data)
        return self._change(slug, Role.EDITOR, lambda study: study_update(
            study=study, changes=changes, user=request.user))

    @extend_schema(responses={200: inline_serializer("StudyDefinition", {
                       "slug": serializers.CharField(), "title": serializers.CharField(),
                       "questions": serializers.ListField(child=serializers.DictField()),
                       "design": serializers.DictField(), "analysis": serializers.DictField()})},
                   description="The study's definition, as a definition file holds it: "
                               "`create_study --definition` (or POST /api/studies/) reads it "
                               "back to an equal study. Viewer.")
    @action(detail=True, methods=["get"])
    def definition(self, request: Request, slug: str) -> Response:
        return Response(study_definition(study=study_get(user=request.user, slug=slug)))

    @extend_schema(request=inline_serializer("Clone", {
                       "slug": serializers.SlugField(max_length=60),
                       "title": serializers.CharField(required=False)}),
                   responses={201: StudySerializer, 400: PROBLEMS},
                   description="Copy the study's settings and items (no participant, answer or "
                               "result) to a new draft under `slug`, owned by the caller. Editor.")
    @action(detail=True, methods=["post"])
    def clone(self, request: Request, slug: str) -> Response:
        study = study_get(user=request.user, slug=slug, need=Role.EDITOR)
        body = CloneSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            clone = study_clone(study=study, slug=body.validated_data["slug"],
                                title=body.validated_data.get("title"), user=request.user)
        except InputError as exc:
            return problems_response(exc)
        return Response(StudySerializer(study_get(user=request.user, slug=clone.slug)).data,
                        status=status.HTTP_201_CREATED)

    @extend_schema(request=ComparisonsSerializer,
                   responses={201: inline_serializer("ComparisonsBuilt", {
                       "created": serializers.IntegerField()}), 400: PROBLEMS},
                   description="Build the study's comparisons from the systems' outputs of each "
                               "source, replacing those it had (docs/comparisons.md): all pairs "
                               "(`per_pair` times each) or best–worst tuples of `size` "
                               "(`n_tuples` per source, default twice its outputs); seeded. "
                               "While a draft or before any answer; recorded. Editor.")
    @action(detail=True, methods=["post"])
    def comparisons(self, request: Request, slug: str) -> Response:
        study = study_get(user=request.user, slug=slug, need=Role.EDITOR)
        body = ComparisonsSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            n = comparisons_generate(study=study, user=request.user, **body.validated_data)
        except InputError as exc:
            return problems_response(exc)
        return Response({"created": n}, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={200: StudySerializer, 400: PROBLEMS},
                   description="Open the study to annotators (from draft, paused or closed; its "
                               "design must be buildable). Editor.")
    @action(detail=True, methods=["post"])
    def open(self, request: Request, slug: str) -> Response:
        return self._change(slug, Role.EDITOR, lambda study: study_transition(
            study=study, action="open", user=request.user))

    @extend_schema(request=None, responses={200: StudySerializer, 400: PROBLEMS},
                   description="Pause an open study: no new item is shown; answers to items "
                               "already on screen are accepted for the grace period. Editor.")
    @action(detail=True, methods=["post"])
    def pause(self, request: Request, slug: str) -> Response:
        return self._change(slug, Role.EDITOR, lambda study: study_transition(
            study=study, action="pause", user=request.user))

    @extend_schema(request=None, responses={200: StudySerializer, 400: PROBLEMS},
                   description="Close an open or paused study (answers to items already on "
                               "screen are accepted for the grace period). Editor.")
    @action(detail=True, methods=["post"])
    def close(self, request: Request, slug: str) -> Response:
        return self._change(slug, Role.EDITOR, lambda study: study_transition(
            study=study, action="close", user=request.user))

    @extend_schema(request=inline_serializer("Archive", {"archived": serializers.BooleanField()}),
                   responses={200: StudySerializer, 400: PROBLEMS},
                   description="Archive a draft or closed study (read-only, hidden from the "
                               "default list), or unarchive it with {\"archived\": false}. Editor.")
    @action(detail=True, methods=["post"])
    def archive(self, request: Request, slug: str) -> Response:
        body = request.data if isinstance(request.data, dict) else {}
        archived = body.get("archived", True)
        if not isinstance(archived, bool):
            raise ValidationError({"archived": ["must be true or false"]})
        return self._change(slug, Role.EDITOR, lambda study: study_archive(
            study=study, archived=archived, user=request.user))

    @extend_schema(request=inline_serializer("DeleteStudy", {"confirm_slug": serializers.CharField()}),
                   responses={200: inline_serializer("Deleted", {
                       "items": serializers.IntegerField(),
                       "participants": serializers.IntegerField()}), 400: PROBLEMS},
                   description="Delete the study with every item, participant and answer; "
                               "`confirm_slug` must repeat its slug. Owner only.")
    @action(detail=True, methods=["post"], url_path="delete")
    def delete_study(self, request: Request, slug: str) -> Response:
        study = study_get(user=request.user, slug=slug, need=Role.OWNER)
        body = request.data if isinstance(request.data, dict) else {}
        confirm = body.get("confirm_slug")
        if not isinstance(confirm, str):
            raise ValidationError({"confirm_slug": ["repeat the study's slug to delete it"]})
        try:
            counts = study_delete(study=study, confirm_slug=confirm, user=request.user)
        except InputError as exc:
            return problems_response(exc)
        return Response(counts)


class ItemEditSerializer(serializers.Serializer):
    text = serializers.CharField(required=False, allow_blank=True, max_length=100_000)
    text_a = serializers.CharField(required=False, allow_blank=True, max_length=100_000)
    text_b = serializers.CharField(required=False, allow_blank=True, max_length=100_000)
    is_control = serializers.BooleanField(required=False)


class ItemViewSet(StudyScopedMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin,
                  viewsets.GenericViewSet):
    """Items by their imported id (URL-encoded): `/api/studies/<slug>/items/<id>/`."""

    serializer_class = ItemSerializer
    queryset = Item.objects.none()
    parser_classes = [MultiPartParser, FormParser, JSONParser]
    lookup_field = "external_id"
    lookup_url_kwarg = "item_id"
    lookup_value_regex = "[^/]+"

    @extend_schema(request=ItemEditSerializer, responses={200: ItemSerializer, 400: PROBLEMS},
                   description="Edit an item while the study is a draft and the item has no "
                               "answers (its texts, its control flag); recorded in the history. "
                               "Editor.")
    def partial_update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        item = self.get_object()
        body = ItemEditSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            item_update(item=item, user=request.user, **body.validated_data)
        except InputError as exc:
            return problems_response(exc)
        return Response(ItemSerializer(Item.objects.get(pk=item.pk)).data)

    @extend_schema(request=None, responses={200: inline_serializer("ItemDeleted", {
                       "deleted": serializers.CharField()}), 400: PROBLEMS},
                   description="Delete an item while the study is a draft and the item has no "
                               "answers; recorded in the history. Editor.")
    @action(detail=True, methods=["post"], url_path="delete")
    def delete_item(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        item = self.get_object()
        try:
            item_delete(item=item, user=request.user)
        except InputError as exc:
            return problems_response(exc)
        return Response({"deleted": item.external_id})

    @extend_schema(parameters=[
        OpenApiParameter("system", str, description="Only the items of this system (exact; "
                                                    "empty: the items that name none)."),
        OpenApiParameter("source", str, description="Only the items of this source (exact; "
                                                    "empty: the items that name none).")])
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().list(request, *args, **kwargs)

    def get_queryset(self):
        if self.schema_only():
            return Item.objects.none()
        items = Item.objects.filter(study=self.study()).order_by("position")
        if self.action == "list":
            items = item_filter(items, system=self.request.query_params.get("system"),
                                source=self.request.query_params.get("source"))
        return items

    @extend_schema(request={"multipart/form-data": UploadSerializer},
                   responses={201: inline_serializer("Imported", {
                       "imported": serializers.IntegerField()}), 400: PROBLEMS},
                   description="Add items from one file while the study is a draft: every row is "
                               "checked first; on any problem nothing is stored.")
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        study = self.study()
        upload = request.FILES.get("file")
        if upload is None:
            raise ValidationError({"file": ["send the item file as the multipart field 'file'"]})
        limit = settings.CONCORD_MAX_UPLOAD_BYTES
        if upload.size > limit:
            raise ValidationError({"file": [size_over_limit(upload.size, limit=limit)]})
        try:
            n = items_import(study=study, data=upload.read(), filename=upload.name or "items",
                             user=request.user)
        except InputError as exc:
            return problems_response(exc)
        return Response({"imported": n}, status=status.HTTP_201_CREATED)


class SystemScoreSerializer(serializers.ModelSerializer):
    class Meta:
        model = SystemScore
        fields = ["system", "metric", "value"]


class SystemScoreViewSet(StudyScopedMixin, mixins.ListModelMixin, viewsets.GenericViewSet):
    """The study's system-level metric scores (docs/systems.md):
    `/api/studies/<slug>/system-scores/`."""

    serializer_class = SystemScoreSerializer
    queryset = SystemScore.objects.none()
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(parameters=[OpenApiParameter("metric", str, description="Only this metric's "
                                                                           "scores.")],
                   description="The scores, by metric then system. Viewer.")
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().list(request, *args, **kwargs)

    def get_queryset(self):
        if self.schema_only():
            return SystemScore.objects.none()
        scores = SystemScore.objects.filter(study=self.study()).order_by("metric", "system")
        metric = self.request.query_params.get("metric")
        if metric is not None:
            scores = scores.filter(metric=clean_query(metric))
        return scores

    @extend_schema(request={"multipart/form-data": UploadSerializer},
                   responses={201: inline_serializer("SystemScoresImported", {
                       "imported": serializers.IntegerField(),
                       "metrics": serializers.ListField(child=serializers.CharField()),
                       "replaced": serializers.IntegerField(),
                       "skipped": serializers.ListField(child=serializers.DictField())}),
                       400: PROBLEMS},
                   description="Upload a `system,metric,value` file: it replaces the study's "
                               "scores of the metrics it names (the others stay); the rows of a "
                               "system no item names are skipped and listed in `skipped`. On any "
                               "other problem nothing changes. Editor.")
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        study = self.study()
        upload = request.FILES.get("file")
        if upload is None:
            raise ValidationError({"file": ["send the scores file as the multipart field "
                                            "'file'"]})
        limit = settings.CONCORD_MAX_UPLOAD_BYTES
        if upload.size > limit:
            raise ValidationError({"file": [size_over_limit(upload.size, limit=limit)]})
        try:
            done = system_scores_import(study=study, data=upload.read(),
                                        filename=upload.name or "scores", user=request.user)
        except InputError as exc:
            return problems_response(exc)
        return Response({"imported": done.rows, "metrics": done.metrics,
                         "replaced": done.replaced,
                         "skipped": [{"file": p.file, "line": p.line, "column": p.column,
                                      "message": p.message} for p in done.warnings.problems]},
                        status=status.HTTP_201_CREATED)


class ParticipantViewSet(StudyScopedMixin, viewsets.ReadOnlyModelViewSet):
    serializer_class = ParticipantSerializer
    queryset = Participant.objects.none()
    parser_classes = [JSONParser, FormParser]

    def get_queryset(self):
        if self.schema_only():
            return Participant.objects.none()
        return Participant.objects.filter(study=self.study()).order_by("id")

    @extend_schema(request=InviteSerializer, responses={201: InvitedSerializer(many=True)},
                   description="Create invitation links, one per annotator; each comes with its "
                               "link.")
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        study = self.study()
        body = InviteSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            created = participants_invite(study=study, user=request.user,
                                          **body.validated_data)
        except ValueError as exc:  # e.g. no items to assign yet
            raise ValidationError({"detail": str(exc)}) from None
        return Response(InvitedSerializer(created, many=True, context={"request": request}).data,
                        status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={200: ParticipantSerializer, 400: PROBLEMS},
                   description="Revoke the participant's link: the annotator then sees a page "
                               "saying so; answers already stored stay. Editor.")
    @action(detail=True, methods=["post"])
    def revoke(self, request: Request, study_slug: str, pk: str) -> Response:
        participant = self.get_object()
        try:
            participant_revoke(participant=participant, user=request.user)
        except InputError as exc:
            return problems_response(exc)
        return Response(ParticipantSerializer(participant).data)

    @extend_schema(request=None,
                   responses={200: inline_serializer("ParticipantDeleted", {
                       "pseudonym": serializers.CharField(),
                       "responses": serializers.IntegerField(),
                       "answers": serializers.IntegerField(),
                       "analysis_runs": serializers.IntegerField(),
                       "exports": serializers.IntegerField()}), 400: PROBLEMS},
                   description="Delete the participant with every answer (withdrawal of "
                               "consent), and the study's analysis runs and exports made since "
                               "their first answer; returns what was deleted. Recorded without "
                               "the data. Editor.")
    @action(detail=True, methods=["post"], url_path="delete")
    def delete_participant(self, request: Request, study_slug: str, pk: str) -> Response:
        participant = self.get_object()
        try:
            counts = participant_delete(participant=participant, user=request.user)
        except InputError as exc:
            return problems_response(exc)
        return Response(counts)

    @extend_schema(request=inline_serializer("Exclude", {"excluded": serializers.BooleanField()}),
                   responses={200: inline_serializer("Excluded", {
                       "excluded_annotators": serializers.ListField(
                           child=serializers.CharField())}), 400: PROBLEMS},
                   description="Leave the participant's answers out of every later analysis run "
                               "(or take them back in with {\"excluded\": false}); recorded in "
                               "the study's analysis settings by the pseudonym the results use. "
                               "Editor.")
    @action(detail=True, methods=["post"])
    def exclude(self, request: Request, study_slug: str, pk: str) -> Response:
        participant = self.get_object()
        body = request.data if isinstance(request.data, dict) else {}
        excluded = body.get("excluded", True)
        if not isinstance(excluded, bool):
            raise ValidationError({"excluded": ["must be true or false"]})
        pseudonym = participant.pseudonym
        if not pseudonym:
            raise ValidationError({"detail": "this participant has no answer yet, so no "
                                             "pseudonym in the results"})
        try:
            current = participant_exclude(study=self.study(), pseudonym=pseudonym,
                                          excluded=excluded, user=request.user)
        except InputError as exc:
            return problems_response(exc)
        return Response({"excluded_annotators": current})


class MemberSerializer(serializers.ModelSerializer):
    username = serializers.CharField(source="user.get_username", read_only=True)
    added_by = serializers.CharField(source="added_by.get_username", read_only=True,
                                     default=None)

    class Meta:
        model = Membership
        fields = ["id", "username", "role", "added_by", "added_at"]


class MemberAddSerializer(serializers.Serializer):
    username = serializers.CharField(max_length=150)
    role = serializers.ChoiceField(choices=Membership.Role.choices)


class MemberInviteSerializer(serializers.Serializer):
    email = serializers.EmailField(max_length=254)
    role = serializers.ChoiceField(choices=Membership.Role.choices)


class InvitationSerializer(MemberSerializer):
    new_account = serializers.BooleanField(read_only=True)
    mailed = serializers.BooleanField(read_only=True)

    class Meta(MemberSerializer.Meta):
        fields = [*MemberSerializer.Meta.fields, "new_account", "mailed"]


class MemberRoleSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=Membership.Role.choices)


class MemberViewSet(StudyScopedMixin, viewsets.GenericViewSet):
    """The researchers sharing a study and their roles: owners only, reads included."""

    serializer_class = MemberSerializer
    queryset = Membership.objects.none()
    parser_classes = [JSONParser, FormParser]
    write_role = Role.OWNER

    def study(self) -> Study:
        if not hasattr(self, "_study"):
            self._study = study_get(user=self.request.user, slug=self.kwargs["study_slug"],
                                    need=Role.OWNER)
        return self._study

    def get_queryset(self):
        if self.schema_only():
            return Membership.objects.none()
        return (Membership.objects.filter(study=self.study())
                .select_related("user", "added_by").order_by("id"))

    @extend_schema(responses={200: MemberSerializer(many=True)},
                   description="The researchers with a role in the study. Owner.")
    def list(self, request: Request, study_slug: str) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(MemberSerializer(page, many=True).data)

    @extend_schema(request=MemberAddSerializer, responses={201: MemberSerializer, 400: PROBLEMS},
                   description="Share the study with a researcher who has an account, by user "
                               "name, as viewer, editor or owner. Recorded. Owner.")
    def create(self, request: Request, study_slug: str) -> Response:
        study = self.study()
        body = MemberAddSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            membership = member_add(study=study, user=request.user, **body.validated_data)
        except InputError as exc:
            return problems_response(exc)
        return Response(MemberSerializer(membership).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=MemberInviteSerializer,
                   responses={201: InvitationSerializer, 400: PROBLEMS},
                   description="Share the study by e-mail address, as on the Sharing page: an "
                               "address without an account gets one (no password yet) and a "
                               "mail with a link to choose it; an account with the address is "
                               "added and told. `new_account` says which, `mailed` whether the "
                               "mail went out. At most CONCORD_INVITES_PER_HOUR an hour per "
                               "owner (then 429). Recorded. Owner.")
    @action(detail=False, methods=["post"])
    def invite(self, request: Request, study_slug: str) -> Response:
        study = self.study()
        body = MemberInviteSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        if not invite_allowed(user=request.user):
            raise Throttled(wait=3600, detail="You have sent the most invitations this site "
                                              "allows in an hour; try again later.")
        try:
            done = member_invite(study=study, user=request.user,
                                 site_url=request.build_absolute_uri("/"), **body.validated_data)
        except InputError as exc:
            return problems_response(exc)
        membership = done.membership
        membership.new_account, membership.mailed = done.new_account, done.mailed
        return Response(InvitationSerializer(membership).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses={200: MemberSerializer}, description="One researcher's role. Owner.")
    def retrieve(self, request: Request, study_slug: str, pk: str) -> Response:
        return Response(MemberSerializer(self.get_object()).data)

    @extend_schema(request=MemberRoleSerializer, responses={200: MemberSerializer, 400: PROBLEMS},
                   description="Change a researcher's role; the study's last owner stays an "
                               "owner. Recorded. Owner.")
    def partial_update(self, request: Request, study_slug: str, pk: str) -> Response:
        membership = self.get_object()
        body = MemberRoleSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            membership = member_change(membership=membership, role=body.validated_data["role"],
                                       user=request.user)
        except InputError as exc:
            return problems_response(exc)
        return Response(MemberSerializer(membership).data)

    @extend_schema(request=None, responses={204: None, 400: PROBLEMS},
                   description="Take a researcher's role away (the last owner cannot be "
                               "removed). Recorded. Owner.")
    @action(detail=True, methods=["post"])
    def remove(self, request: Request, study_slug: str, pk: str) -> Response:
        membership = self.get_object()
        try:
            member_remove(membership=membership, user=request.user)
        except InputError as exc:
            return problems_response(exc)
        return Response(status=status.HTTP_204_NO_CONTENT)
