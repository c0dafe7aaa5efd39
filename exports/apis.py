"""Export jobs through the API: start one, poll it, download its file.

Every export runs as a background job here (a script can poll), whatever the study's size; the
same job as the browser's "prepare in the background", with the same one-job-at-a-time rule.
"""

from __future__ import annotations

from typing import Any, cast

from django.contrib.auth.models import User
from django.db.models import QuerySet
from django.http import FileResponse, Http404
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from studies.selectors import Role, StudyScopedMixin

from .models import ExportJob
from .selectors import export_job_file, export_job_status
from .services import CONTENT_TYPES, WHATS, ExportError, export_job_create, export_validate


# Typed by the viewset's model, as the stubs ask of a viewset's `serializer_class`: it only reads
# the body that starts a job.
class ExportStartSerializer(serializers.Serializer[ExportJob]):
    what = serializers.ChoiceField(choices=sorted(WHATS))
    format = serializers.CharField(required=False, allow_blank=True, max_length=10,
                                   help_text="One of the export's formats (docs/exports.md); "
                                             "empty: its first.")


JOB = inline_serializer("ExportJobStatus", {
    "id": serializers.IntegerField(), "status": serializers.CharField(),
    "progress": serializers.IntegerField(), "message": serializers.CharField(),
    "what": serializers.CharField(), "format": serializers.CharField(),
    "rows": serializers.IntegerField(allow_null=True),
    "size_bytes": serializers.IntegerField(allow_null=True),
    "download_url": serializers.CharField(required=False)})


class ExportJobViewSet(StudyScopedMixin, mixins.RetrieveModelMixin,
                       viewsets.GenericViewSet[ExportJob]):
    """`/api/studies/<slug>/exports/`: a viewer may export (as on the dashboard)."""

    queryset = ExportJob.objects.none()
    serializer_class = ExportStartSerializer
    write_role = Role.VIEWER

    def get_queryset(self) -> QuerySet[ExportJob]:
        if self.schema_only():
            return ExportJob.objects.none()
        return ExportJob.objects.filter(study=self.study())

    def _status(self, job: ExportJob) -> dict[str, Any]:
        body = {"id": job.pk, **export_job_status(job=job)}
        if job.status == ExportJob.Status.DONE:
            body["download_url"] = self.request.build_absolute_uri(reverse(
                "exports:exports-api-download", kwargs={"study_slug": job.study.slug, "pk": job.pk}))
        return body

    @extend_schema(request=ExportStartSerializer, responses={202: JOB, 400: OpenApiTypes.OBJECT,
                                                             503: JOB},
                   description="Start an export job (or return the one of the same export "
                               "still running). Poll it; download its file when `status` is "
                               "`done`. `503` with the reason when the task queue is down.")
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        study = self.study()
        body = ExportStartSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            what, fmt = export_validate(what=body.validated_data["what"],
                                        fmt=body.validated_data.get("format") or None)
        except ExportError as exc:
            return Response({"format": [str(exc)]}, status=status.HTTP_400_BAD_REQUEST)
        # An account: the API lets no anonymous request through.
        job = export_job_create(study=study, user=cast(User, request.user), what=what, fmt=fmt)
        if job.status == ExportJob.Status.FAILED:
            return Response(self._status(job), status=status.HTTP_503_SERVICE_UNAVAILABLE,
                            headers={"Retry-After": "30"})
        return Response(self._status(job), status=status.HTTP_202_ACCEPTED)

    @extend_schema(responses={200: JOB}, description="Poll an export job.")
    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return Response(self._status(self.get_object()))

    @extend_schema(responses={(200, "application/octet-stream"): OpenApiTypes.BINARY},
                   description="The job's file, once it is done (404 before).")
    @action(detail=True, methods=["get"])
    def download(self, request: Request, *args: Any, **kwargs: Any) -> FileResponse:
        job = self.get_object()
        path = export_job_file(job=job)
        if path is None:
            raise Http404("This export is not ready")
        response = FileResponse(path.open("rb"), as_attachment=True,
                                filename=f"{job.study.slug}-{job.what}.{job.format}",
                                content_type=CONTENT_TYPES[job.format])
        response["Cache-Control"] = "no-store"
        return response
