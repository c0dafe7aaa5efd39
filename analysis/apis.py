"""Results API: the latest results document, and analysis runs to list, start and poll."""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import api_view
from rest_framework.response import Response

from core.results import COMPARISON_SECTIONS, SCHEMA
from core.settings import AnalysisSettings, Knob, SettingsError, knobs
from studies.decorators import study_view
from studies.models import Study
from studies.selectors import Role, StudyScopedMixin

from .charts.systems import SYSTEM_SECTIONS
from .models import AnalysisRun
from .selectors import document_run_id, item_records_page, latest_results
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
        return serializers.IntegerField(allow_null=spec.optional, **common)
    if spec.kind == "float":
        return serializers.FloatField(allow_null=spec.optional, **common)
    if spec.kind == "bool":
        return serializers.BooleanField(**common)
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
        study = self.study()
        run = analysis_run_create(study=study, user=request.user, settings=AnalysisSettings.from_mapping(
            serializer.validated_data, base=study.analysis))
        if run.status == AnalysisRun.Status.FAILED:  # the broker did not answer
            return Response({"detail": run.error, "run": AnalysisRunSerializer(run).data},
                            status=status.HTTP_503_SERVICE_UNAVAILABLE,
                            headers={"Retry-After": "30"})
        return Response(AnalysisRunSerializer(run).data, status=status.HTTP_201_CREATED)


@extend_schema(responses=OpenApiTypes.OBJECT,
               description=f"The results document {SCHEMA}, every question of the study "
                           "(docs/results.schema.json).")
# The API's default permissions (a log-in; a token's scope and study), as every API route.
@api_view(["GET"])
@study_view(need=Role.VIEWER, slug_kwarg="study_slug")
def results(request, study: Study) -> Response:
    """Return the latest results document of the study (404 before the first finished run)."""
    document = latest_results(study=study)
    if document is None:
        raise Http404("No finished analysis yet: start a run.")
    return Response(document)


ITEM_FILTERS = {"item_gaps": ("question", "scale", "aggregate", "metric", "item"),
                "item_labels": ("question", "scale", "method", "item")}
PAGE_MAX = 5000


@extend_schema(
    responses=OpenApiTypes.OBJECT,
    parameters=[
        OpenApiParameter("after", int, description="The place to continue after: the `next` of "
                         "the previous page (default: from the first record)."),
        OpenApiParameter("limit", int, description=f"Records per page, 1–{PAGE_MAX} (500)."),
        *[OpenApiParameter(name, str, description=f"Only the records whose {name} is this.")
          for name in dict.fromkeys(f for fields in ITEM_FILTERS.values() for f in fields)]],
    description="One page of the latest run's per-item records, `item_gaps` or `item_labels` "
                "(docs/results.md, \"Items stored apart\"), in the full document's order: "
                "{section, run, results, next}; ask again with after=next until next is null.")
@api_view(["GET"])
@study_view(need=Role.VIEWER, slug_kwarg="study_slug")
def result_items(request, study: Study, section: str) -> Response:
    """Page through the per-item records the results document keeps apart."""
    if section not in ITEM_FILTERS:
        raise Http404(f"No such section: choose one of {', '.join(ITEM_FILTERS)}.")
    params = request.query_params
    problems: dict[str, list[str]] = {}
    numbers = {}
    for name, default, low, high in (("after", -1, -1, 2**31 - 1), ("limit", 500, 1, PAGE_MAX)):
        raw = params.get(name, "")
        try:
            numbers[name] = default if raw == "" else int(raw)
        except ValueError:
            problems[name] = [f"must be a whole number, got {raw[:40]!r}"]
            continue
        if not low <= numbers[name] <= high:
            problems[name] = [f"must be between {low} and {high}"]
    for name in ITEM_FILTERS[section]:
        value = params.get(name, "")
        if "\x00" in value or len(value) > 1000:
            problems[name] = ["must be text of at most 1000 characters, without NUL"]
    unknown = sorted(set(params) - {"after", "limit", "format", *ITEM_FILTERS[section]})
    for name in unknown:
        problems[name[:40]] = [f"not a filter of {section}; use "
                               f"{', '.join(ITEM_FILTERS[section])}"]
    if problems:
        return Response(problems, status=status.HTTP_400_BAD_REQUEST)
    document = latest_results(study=study)
    if document is None:
        raise Http404("No finished analysis yet: start a run.")
    match = {name: params[name] for name in ITEM_FILTERS[section] if name in params}
    page, after = item_records_page(document=document, section=section,
                                    after=numbers["after"], limit=numbers["limit"], **match)
    return Response({"section": section, "run": document_run_id(document), "results": page,
                     "next": after})


# The filters of each systems section: a record's field of that name must equal the value given
# (``system`` matches either system of a pairwise test).
SYSTEM_FILTERS: dict[str, tuple[str, ...]] = {
    "systems": ("question", "scale", "system"),
    "system_tests": ("question", "scale", "system"),
    "system_clusters": ("question", "scale", "system", "cluster"),
    "mixed_model": ("question", "scale", "kind"),
    "metric_meta_evaluation": ("question", "scale", "metric", "level", "statistic"),
}
assert set(SYSTEM_FILTERS) == set(SYSTEM_SECTIONS)


def _matches(record: dict, name: str, value: str) -> bool:
    if name == "system" and "system_a" in record:
        return value in (str(record.get("system_a")), str(record.get("system_b")))
    return str(record.get(name)) == value


@extend_schema(
    responses=OpenApiTypes.OBJECT,
    parameters=[OpenApiParameter(name, str, description=f"Only the records whose {name} is "
                                 "this (a test's system: either of its two).")
                for name in dict.fromkeys(f for fields in SYSTEM_FILTERS.values()
                                          for f in fields)],
    description="The latest run's records of one section of the systems analysis (`systems`, "
                "`system_tests`, `system_clusters`, `mixed_model`, `metric_meta_evaluation`; "
                "docs/results.md), every question and scale unless filtered: "
                "{section, run, results}. A study without systems gives an empty list.")
@api_view(["GET"])
@study_view(need=Role.VIEWER, slug_kwarg="study_slug")
def system_results(request, study: Study, section: str) -> Response:
    """Return the records of one systems section of the latest results document."""
    return _section_records(request, study, section, SYSTEM_FILTERS)


def _section_records(request, study: Study, section: str,
                     filters: dict[str, tuple[str, ...]]) -> Response:
    """The records of one section of the latest document, filtered by the query's fields."""
    if section not in filters:
        raise Http404(f"No such section: choose one of {', '.join(filters)}.")
    params = request.query_params
    allowed = filters[section]
    problems: dict[str, list[str]] = {}
    for name in sorted(set(params) - {"format", *allowed}):
        problems[name[:40]] = [f"not a filter of {section}; use {', '.join(allowed)}"]
    for name in allowed:
        value = params.get(name, "")
        if "\x00" in value or len(value) > 1000:
            problems[name] = ["must be text of at most 1000 characters, without NUL"]
    if problems:
        return Response(problems, status=status.HTTP_400_BAD_REQUEST)
    document = latest_results(study=study)
    if document is None:
        raise Http404("No finished analysis yet: start a run.")
    records = document.get(section)
    match = {name: params[name] for name in allowed if name in params}
    rows = [r for r in (records if isinstance(records, list) else [])
            if isinstance(r, dict) and all(_matches(r, k, v) for k, v in match.items())]
    return Response({"section": section, "run": document_run_id(document), "results": rows})


# The filters of each comparisons section (docs/results.md, "Comparisons").
COMPARISON_FILTERS: dict[str, tuple[str, ...]] = {
    "comparison_scores": ("question", "kind", "level", "name"),
    "comparison_win_probabilities": ("question", "kind", "level", "a", "b"),
    "comparison_reliability": ("question", "kind", "level"),
    "comparison_consistency": ("question", "kind", "annotator"),
    "comparison_correlations": ("question", "kind", "level", "measure", "measure_kind"),
}
assert set(COMPARISON_FILTERS) == set(COMPARISON_SECTIONS)


@extend_schema(
    responses=OpenApiTypes.OBJECT,
    parameters=[OpenApiParameter(name, str, description=f"Only the records whose {name} is "
                                 "this.")
                for name in dict.fromkeys(f for fields in COMPARISON_FILTERS.values()
                                          for f in fields)],
    description="The latest run's records of one section of the comparative questions' "
                "analysis (`comparison_scores`, `comparison_win_probabilities`, "
                "`comparison_reliability`, `comparison_consistency`, "
                "`comparison_correlations`; docs/results.md), every comparative question "
                "unless filtered: {section, run, results}. A study without comparative questions "
                "gives an empty list.")
@api_view(["GET"])
@study_view(need=Role.VIEWER, slug_kwarg="study_slug")
def comparison_results(request, study: Study, section: str) -> Response:
    """Return the records of one comparisons section of the latest results document."""
    return _section_records(request, study, section, COMPARISON_FILTERS)
