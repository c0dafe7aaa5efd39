"""Researcher API: the stored responses of a study the caller owns."""

from __future__ import annotations

from rest_framework import mixins, serializers, viewsets

from studies.apis import OwnedStudyMixin

from .models import Response


class ResponseSerializer(serializers.ModelSerializer):
    participant = serializers.IntegerField(source="participant_id")
    item = serializers.CharField(source="item.external_id")

    class Meta:
        model = Response
        fields = ["id", "participant", "item", "presentation", "position", "value", "active_ms",
                  "source", "received_at"]


class ResponseViewSet(OwnedStudyMixin, mixins.ListModelMixin, viewsets.GenericViewSet):
    serializer_class = ResponseSerializer
    filterset_fields = ["participant", "presentation"]
    queryset = Response.objects.none()

    def get_queryset(self):
        if self.schema_only():
            return Response.objects.none()
        return (Response.objects.filter(participant__study=self.study())
                .select_related("item").order_by("id"))
