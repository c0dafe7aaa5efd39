"""Results API: the latest results document, and analysis runs to list, start and poll."""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import api_view, permission_classes
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from core.results import SCHEMA
from core.settings import AnalysisSettings, Knob, SettingsError, knobs
from studies.selectors import StudyScopedMixin, study_get

from .models import AnalysisRun
from .selectors import latest_results
from .services import analysis_run_create


class AnalysisRunSerializer(serializers.ModelSerializer):
    class Meta:
        model = AnalysisRun
        fields = ["id", "status", "progress", "message", "settings", "code_version", "attempts",
                  "created_at", "started_at", "finished_at", "timings", "error"]
        read_only_fields = fields


def _api_field(spec: Knob) -> serializers.Field:
    """The JSON type of one setting; its values are checked by AnalysisSettings itself."""
    common = {"required": False, "help_text": f"{spec.help} ({spec.bounds()})" if spec.kind in
              ("int", "float") else spec.help}
    if spec.kind == "choice":
        return serializers.ChoiceField(spec.choices, **common)
    if spec.kind == "int":
        return serializers.IntegerField(**common)
    if spec.kind == "float":
        return serializers.FloatField(allow_null=spec.optional, **common)
    return serializers.ListField(child=serializers.CharField(), **common)


def _nested(problems: dict[str, list[str]]) -> dict:
    """``{"heuristics.slow.threshold_s": [...]}`` → ``{"heuristics": {"slow": {...}}}`` (DRF's shape)."""
    out: dict = {}
    for path, messages in problems.items():
        *parents, name = path.split(".")
        node = out
        for part in parents:
            node = node.setdefault(part, {})
        node[name] = messages
    return out


class RunStartSerializer(serializers.Serializer):
    """Settings to change for this run; every key of the analysis settings may be given
    (``heuristics`` and ``quality`` as nested objects, e.g. ``{"slow": {"threshold_s": 600}}``)."""

    def get_fields(self):
        fields = {path: _api_field(spec) for path, spec in knobs().items() if "." not in path}
        # Every section (heuristics, quality) as a nested object of its rules' parameters.
        for section in dict.fromkeys(path.split(".")[0] for path in knobs() if "." in path):
            fields[section] = serializers.DictField(required=False, help_text=(
                f"the {section} rules' parameters to change, by rule: "
                + "; ".join(f"{path.removeprefix(section + '.')} ({spec.bounds() or spec.kind})"
                            for path, spec in knobs().items() if path.startswith(section + "."))))
        return {**fields, **super().get_fields()}

    def validate(self, attrs):
        # Unknown keys are errors here as everywhere else: a typo never passes silently.
        unknown = {key: ["unknown key"] for key in self.initial_data if key not in self.fields}
        try:
            AnalysisSettings.from_mapping(attrs)
        except SettingsError as exc:
            raise serializers.ValidationError({**unknown, **_nested(exc.fields)}) from None
        if unknown:
            raise serializers.ValidationError(unknown)
        return attrs


class AnalysisRunViewSet(StudyScopedMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin,
                         mixins.CreateModelMixin, viewsets.GenericViewSet):
    serializer_class = AnalysisRunSerializer
    queryset = AnalysisRun.objects.none()

    def get_queryset(self):
        if self.schema_only():
            return AnalysisRun.objects.none()
        return AnalysisRun.objects.filter(study=self.study()).defer("results")

    def get_serializer_class(self):
        return RunStartSerializer if self.action == "create" else AnalysisRunSerializer

    def create(self, request, *args, **kwargs):
        serializer = RunStartSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        run = analysis_run_create(study=self.study(), user=request.user,
                                  overrides=serializer.validated_data)
        if run.status == AnalysisRun.Status.FAILED:  # the broker did not answer
            return Response({"detail": run.error, "run": AnalysisRunSerializer(run).data},
                            status=status.HTTP_503_SERVICE_UNAVAILABLE,
                            headers={"Retry-After": "30"})
        return Response(AnalysisRunSerializer(run).data, status=status.HTTP_201_CREATED)


@extend_schema(responses=OpenApiTypes.OBJECT,
               description=f"The results document {SCHEMA}, every question of the study "
                           "(docs/results.schema.json).")
@api_view(["GET"])
@permission_classes([IsAuthenticated])
def results(request, study_slug: str) -> Response:
    """Return the latest results document of the study (404 before the first finished run)."""
    study = study_get(user=request.user, slug=study_slug)
    document = latest_results(study=study)
    if document is None:
        raise Http404("No finished analysis yet: start a run.")
    return Response(document)
