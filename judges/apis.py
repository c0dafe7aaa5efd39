"""The judges API (`/api/studies/<slug>/judges/`): list, create and delete judges, upload a
run's file, delete a run. A viewer reads, an editor writes (`StudyScopedMixin`); a read-only
token only reads (`tokens.permissions`). A service's `InputError` is a 400 listing every
problem, and nothing is written then (docs/api.md)."""

from __future__ import annotations

from typing import Any, cast

from django.conf import settings
from django.contrib.auth.models import User
from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from core.judges import DEFAULT_RUN, MAX_NAME
from core.problems import InputError
from core.tabular import size_over_limit
from studies.apis import PROBLEMS, problems_response
from studies.parsers import JSONParser
from studies.selectors import StudyScopedMixin

from .models import Judge, JudgeRun
from .services import judge_answers_import, judge_create, judge_delete, judge_run_delete


class JudgeRunSerializer(serializers.ModelSerializer[JudgeRun]):
    class Meta:
        model = JudgeRun
        fields = ["id", "label", "n_answers", "source", "created"]


class JudgeSerializer(serializers.ModelSerializer[Judge]):
    runs = JudgeRunSerializer(many=True, read_only=True)

    class Meta:
        model = Judge
        fields = ["id", "name", "model", "prompt", "version", "date", "temperature", "notes",
                  "created", "runs"]
        read_only_fields = ["id", "created", "runs"]
        extra_kwargs = {
            "date": {"help_text": "An ISO date (YYYY-MM-DD), or empty."},
            "temperature": {"help_text": "A number from 0 to 10, or null."},
        }


class JudgeCreateSerializer(serializers.Serializer[dict[str, Any]]):
    name = serializers.CharField(max_length=MAX_NAME)
    model = serializers.CharField(max_length=200, required=False, allow_blank=True)
    prompt = serializers.CharField(max_length=20_000, required=False, allow_blank=True)
    version = serializers.CharField(max_length=200, required=False, allow_blank=True)
    date = serializers.CharField(max_length=40, required=False, allow_blank=True)
    temperature = serializers.FloatField(required=False, allow_null=True, min_value=0,
                                         max_value=10)
    notes = serializers.CharField(max_length=20_000, required=False, allow_blank=True)


class RunUploadSerializer(serializers.Serializer[dict[str, Any]]):
    file = serializers.FileField(help_text="A judge's answers file: item,value or items,choice "
                                           "with optional question, run, rationale "
                                           "(docs/judges.md).")
    run = serializers.CharField(max_length=MAX_NAME, required=False, default=DEFAULT_RUN,
                                help_text="Labels the rows without a run column.")
    replace = serializers.BooleanField(required=False, default=False,
                                       help_text="Replace a run the judge already has (else "
                                                 "such a run is refused).")


IMPORTED = inline_serializer("JudgeRunImported", {
    "runs": serializers.ListField(child=serializers.CharField()),
    "answers": serializers.IntegerField(),
    "replaced": serializers.ListField(child=serializers.CharField()),
    "warnings": serializers.ListField(child=serializers.CharField())})


class JudgeViewSet(StudyScopedMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin,
                   viewsets.GenericViewSet[Judge]):
    """The study's LLM judges and their runs (docs/judges.md)."""

    serializer_class = JudgeSerializer
    lookup_value_regex = r"[0-9]+"  # a judge's id: anything else is no route (404), never a 500
    queryset = Judge.objects.none()
    parser_classes = [JSONParser, FormParser, MultiPartParser]

    def http_method_not_allowed(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        # Someone without a role in the study gets 404 whatever the method, as on every route
        # of a study: not even which methods a route takes is theirs to learn.
        if not self.schema_only():
            self.study()
        return super().http_method_not_allowed(request, *args, **kwargs)

    def get_queryset(self) -> QuerySet[Judge]:
        if self.schema_only():
            return Judge.objects.none()
        return (Judge.objects.filter(study=self.study()).order_by("name")
                .prefetch_related("runs"))

    @extend_schema(description="The judges, by name, each with its runs. Viewer.")
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().list(request, *args, **kwargs)

    @extend_schema(request=JudgeCreateSerializer, responses={201: JudgeSerializer,
                                                             400: PROBLEMS},
                   description="Add a judge (its name unique in the study) with its metadata. "
                               "Editor.")
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        study = self.study()
        body = JudgeCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            judge = judge_create(study=study, user=cast(User, request.user), **body.validated_data)
        except InputError as exc:
            return problems_response(exc)
        return Response(JudgeSerializer(judge).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={204: None, 400: PROBLEMS},
                   description="Delete the judge with its runs and answers. Editor.")
    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        judge = self._judge()
        try:
            judge_delete(judge=judge, user=cast(User, request.user))
        except InputError as exc:
            return problems_response(exc)
        return Response(status=status.HTTP_204_NO_CONTENT)

    def _judge(self) -> Judge:
        return get_object_or_404(Judge, pk=self.kwargs["pk"], study=self.study())

    @extend_schema(request={"multipart/form-data": RunUploadSerializer},
                   responses={201: IMPORTED, 400: PROBLEMS},
                   description="Upload a file of the judge's answers: one or more runs (the "
                               "file's run column, else `run`). A run the judge already has is "
                               "refused unless `replace`. On any problem nothing is stored. "
                               "Editor.")
    @action(detail=True, methods=["post"], url_path="runs",
            parser_classes=[MultiPartParser, FormParser])
    def runs(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        judge = self._judge()
        body = RunUploadSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        upload = body.validated_data["file"]
        limit = settings.CONCORD_MAX_UPLOAD_BYTES
        if upload.size > limit:
            raise ValidationError({"file": [size_over_limit(upload.size, limit=limit)]})
        try:
            done = judge_answers_import(
                study=self.study(), judge=judge, data=upload.file,
                filename=upload.name or "judge.csv", run=body.validated_data["run"],
                replace=body.validated_data["replace"], user=cast(User, request.user))
        except InputError as exc:
            return problems_response(exc)
        return Response({"runs": done.runs, "answers": done.answers,
                         "replaced": done.replaced, "warnings": done.warnings},
                        status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={204: None, 400: PROBLEMS},
                   description="Delete one run of the judge and its answers. Editor.")
    @action(detail=True, methods=["delete"], url_path=r"runs/(?P<run_id>[0-9]+)")
    def run_delete(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        judge = self._judge()
        run = get_object_or_404(JudgeRun, pk=self.kwargs["run_id"], judge=judge)
        try:
            judge_run_delete(run=run, user=cast(User, request.user))
        except InputError as exc:
            return problems_response(exc)
        return Response(status=status.HTTP_204_NO_CONTENT)
