"""Researcher API: the stored responses of a study, with their answers; importing a file."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema, extend_schema_field, inline_serializer
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response as ApiResponse

from core.problems import InputError
from core.responses import FORMATS
from core.tabular import size_over_limit
from studies.apis import PROBLEMS, problems_response
from studies.selectors import StudyScopedMixin, pseudonyms

from .models import Answer, Response
from .selectors import event_list
from .services import responses_import


class ImportSerializer(serializers.Serializer[Any]):
    file = serializers.FileField(help_text="A response file (docs/importing-responses.md).")
    format = serializers.ChoiceField(choices=FORMATS, help_text="`long` (one row per answer), "
                                     "`wide` (one row per annotator, one column per item) or "
                                     "`judgments` (one row per comparative judgment: "
                                     "annotator, items, choice).")
    annotator_column = serializers.CharField(required=False, max_length=200)
    dry_run = serializers.BooleanField(required=False, default=False,
                                       help_text="Check and summarise, store nothing.")


class AnswerSerializer(serializers.ModelSerializer[Answer]):
    question = serializers.CharField(source="question.key")

    class Meta:
        model = Answer
        fields = ["question", "value", "missing", "comment"]


class ResponseSerializer(serializers.ModelSerializer[Response]):
    participant = serializers.IntegerField(source="participant_id")
    item = serializers.CharField(source="item.external_id")
    role = serializers.CharField(source="item.role", read_only=True,
                                 help_text="The item's role: main, screening or check (a check "
                                           "or screening item is scored on revision 1).")
    answers = AnswerSerializer(many=True, read_only=True)

    class Meta:
        model = Response
        fields = ["id", "participant", "item", "role", "presentation", "position", "revision",
                  "is_current", "answers", "active_ms", "source", "received_at"]


class TimingEventSerializer(serializers.Serializer[Any]):
    event = serializers.CharField(help_text="shown, hidden, visible, select:…, cant_judge:…, "
                                            "answer")
    ms = serializers.IntegerField(help_text="Milliseconds since the item was shown.")


class TimingSerializer(serializers.ModelSerializer[Response]):
    """A response's raw timing events, its annotator by pseudonym (never a token)."""

    annotator = serializers.SerializerMethodField(help_text="The annotator's pseudonym (A1, …).")
    item = serializers.CharField(source="item.external_id")
    current = serializers.BooleanField(source="is_current")
    submitted_at = serializers.DateTimeField(source="received_at")
    events = serializers.SerializerMethodField()

    class Meta:
        model = Response
        fields = ["id", "annotator", "item", "presentation", "position", "revision", "current",
                  "active_ms", "submitted_at", "events"]

    def get_annotator(self, response: Response) -> str:
        return str(self.context["pseudonyms"].get(response.participant_id, ""))

    @extend_schema_field(TimingEventSerializer(many=True))
    def get_events(self, response: Response) -> list[dict[str, Any]]:
        return [{"event": kind, "ms": ms} for kind, ms in event_list(response.events)]


class TimingViewSet(StudyScopedMixin, mixins.ListModelMixin, viewsets.GenericViewSet[Response]):
    """The raw timing events behind each active time: one entry per response (each revision)
    that has events, in the order they were stored (viewer and up; a read-only token is
    enough)."""

    serializer_class = TimingSerializer
    filterset_fields = ["presentation", "revision", "is_current"]
    queryset = Response.objects.none()

    def get_queryset(self) -> QuerySet[Response]:
        if self.schema_only():
            return Response.objects.none()
        return (Response.objects.filter(participant__study=self.study())
                .exclude(events=[]).select_related("item")
                .only("id", "participant_id", "item__external_id", "presentation", "position",
                      "revision", "is_current", "active_ms", "received_at", "events")
                .order_by("id"))

    def get_serializer_context(self) -> dict[str, Any]:
        context = dict(super().get_serializer_context())
        if not self.schema_only():
            context["pseudonyms"] = pseudonyms(study=self.study())
        return context


class ResponseViewSet(StudyScopedMixin, mixins.ListModelMixin,
                       viewsets.GenericViewSet[Response]):
    """Every stored response (each revision; ``is_current`` marks the one that counts)."""

    serializer_class = ResponseSerializer
    filterset_fields = ["participant", "presentation", "is_current"]
    queryset = Response.objects.none()

    def get_queryset(self) -> QuerySet[Response]:
        if self.schema_only():
            return Response.objects.none()
        return (Response.objects.filter(participant__study=self.study())
                .select_related("item").prefetch_related("answers__question").order_by("id"))

    @extend_schema(request={"multipart/form-data": ImportSerializer},
                   responses={200: inline_serializer("ImportSummary", {
                       "imported": serializers.BooleanField(), "rows": serializers.IntegerField(),
                       "annotators": serializers.IntegerField(),
                       "answers": serializers.IntegerField(),
                       "items": serializers.IntegerField()}), 400: PROBLEMS},
                   description="Import responses collected elsewhere (editor): the whole file "
                               "is checked first; on any problem nothing is stored and every "
                               "problem is listed. `dry_run` only checks and summarises.")
    @action(detail=False, methods=["post"], url_path="import",
            parser_classes=[MultiPartParser, FormParser])
    def import_file(self, request: Request, *args: Any, **kwargs: Any) -> ApiResponse:
        study = self.study()
        body = ImportSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        upload = body.validated_data["file"]
        limit = settings.CONCORD_MAX_UPLOAD_BYTES
        if upload.size > limit:
            raise ValidationError({"file": [size_over_limit(upload.size, limit=limit)]})
        try:
            summary = responses_import(
                study=study, data=upload.read(), filename=upload.name or "responses",
                fmt=body.validated_data["format"],
                annotator_column=body.validated_data.get("annotator_column"),
                dry_run=body.validated_data["dry_run"])
        except InputError as exc:
            return problems_response(exc)
        return ApiResponse({"imported": summary.imported, "rows": summary.rows,
                            "annotators": len(summary.annotators), "answers": summary.answers,
                            "items": summary.items}, status=status.HTTP_200_OK)
