"""Results API: the latest results document, and analysis runs to list, start and poll."""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import api_view, permission_classes
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from studies.apis import OwnedStudyMixin
from studies.selectors import study_get

from .models import AnalysisRun
from .selectors import latest_results
from .services import analysis_run_create


class AnalysisRunSerializer(serializers.ModelSerializer):
    class Meta:
        model = AnalysisRun
        fields = ["id", "status", "progress", "message", "settings", "code_version", "attempts",
                  "created_at", "started_at", "finished_at", "timings", "error"]
        read_only_fields = fields


class RunStartSerializer(serializers.Serializer):
    level = serializers.ChoiceField(["nominal", "ordinal", "interval", "ratio"], required=False)
    trust_variant = serializers.ChoiceField(["paper", "notebook"], required=False)
    simple_threshold = serializers.IntegerField(min_value=1, max_value=1000, required=False)
    seed = serializers.IntegerField(required=False)


class AnalysisRunViewSet(OwnedStudyMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin,
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
        return Response(AnalysisRunSerializer(run).data, status=status.HTTP_201_CREATED)


@extend_schema(responses=OpenApiTypes.OBJECT,
               description="The results document concord.results/1 (docs/results.schema.json).")
@api_view(["GET"])
@permission_classes([IsAuthenticated])
def results(request, study_slug: str) -> Response:
    """Return the latest results document of the study (404 before the first finished run)."""
    study = study_get(user=request.user, slug=study_slug)
    document = latest_results(study=study)
    if document is None:
        raise Http404("No finished analysis yet: start a run.")
    return Response(document)
