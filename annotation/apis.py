"""Researcher API: the stored responses of a study the caller owns, with their answers."""

from __future__ import annotations

from rest_framework import mixins, serializers, viewsets

from studies.selectors import StudyScopedMixin

from .models import Answer, Response


class AnswerSerializer(serializers.ModelSerializer):
    question = serializers.CharField(source="question.key")

    class Meta:
        model = Answer
        fields = ["question", "value", "missing", "comment"]


class ResponseSerializer(serializers.ModelSerializer):
    participant = serializers.IntegerField(source="participant_id")
    item = serializers.CharField(source="item.external_id")
    answers = AnswerSerializer(many=True, read_only=True)

    class Meta:
        model = Response
        fields = ["id", "participant", "item", "presentation", "position", "revision",
                  "is_current", "answers", "active_ms", "source", "received_at"]


class ResponseViewSet(StudyScopedMixin, mixins.ListModelMixin, viewsets.GenericViewSet):
    """Every stored response (each revision; ``is_current`` marks the one that counts)."""

    serializer_class = ResponseSerializer
    filterset_fields = ["participant", "presentation", "is_current"]
    queryset = Response.objects.none()

    def get_queryset(self):
        if self.schema_only():
            return Response.objects.none()
        return (Response.objects.filter(participant__study=self.study())
                .select_related("item").prefetch_related("answers__question").order_by("id"))
