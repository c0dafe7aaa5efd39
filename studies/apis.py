"""Researcher API: studies, items and participants, scoped to the studies the caller owns."""

from __future__ import annotations

from rest_framework import mixins, serializers, viewsets

from .models import Item, Participant, Question, Study
from .selectors import StudyScopedMixin, study_list


class QuestionSerializer(serializers.ModelSerializer):
    class Meta:
        model = Question
        fields = ["key", "position", "prompt", "required", "allow_comment", "allow_cant_judge",
                  "preset", "values", "labels", "rubric", "reductions"]


class StudySerializer(serializers.ModelSerializer):
    questions = QuestionSerializer(many=True, read_only=True)

    class Meta:
        model = Study
        fields = ["slug", "title", "status", "display", "language", "items_per_participant",
                  "annotators_per_item", "duplicates_per_participant", "duplicate_min_gap", "seed",
                  "analysis_settings", "created_at", "questions"]


class ItemSerializer(serializers.ModelSerializer):
    id = serializers.CharField(source="external_id")

    class Meta:
        model = Item
        fields = ["id", "position", "text", "text_a", "text_b", "is_control", "metrics",
                  "features", "meta"]


class ParticipantSerializer(serializers.ModelSerializer):
    class Meta:
        model = Participant
        fields = ["id", "source", "external_id", "label", "n_assigned", "n_answered",
                  "created_at", "consented_at", "completed_at", "revoked_at"]


class StudyViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = StudySerializer
    queryset = Study.objects.none()  # typed for the schema; get_queryset scopes to the owner
    lookup_field = "slug"

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return Study.objects.none()
        return study_list(user=self.request.user)


class ItemViewSet(StudyScopedMixin, mixins.ListModelMixin, viewsets.GenericViewSet):
    serializer_class = ItemSerializer
    queryset = Item.objects.none()

    def get_queryset(self):
        if self.schema_only():
            return Item.objects.none()
        return Item.objects.filter(study=self.study()).order_by("position")


class ParticipantViewSet(StudyScopedMixin, viewsets.ReadOnlyModelViewSet):
    serializer_class = ParticipantSerializer
    queryset = Participant.objects.none()

    def get_queryset(self):
        if self.schema_only():
            return Participant.objects.none()
        return Participant.objects.filter(study=self.study()).order_by("id")
