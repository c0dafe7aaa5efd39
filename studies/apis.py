"""Researcher API: studies, items and participants, scoped to the studies the caller owns."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from rest_framework import mixins, serializers, viewsets

from .models import Item, Participant, Scale, Study


class ScaleSerializer(serializers.ModelSerializer):
    class Meta:
        model = Scale
        fields = ["preset", "values", "labels", "rubric", "reductions"]


class StudySerializer(serializers.ModelSerializer):
    scale = ScaleSerializer(read_only=True)

    class Meta:
        model = Study
        fields = ["slug", "title", "status", "display", "language", "items_per_participant",
                  "annotators_per_item", "duplicates_per_participant", "duplicate_min_gap", "seed",
                  "analysis_settings", "created_at", "scale"]


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
        return Study.objects.filter(owner=self.request.user).select_related("scale")


class OwnedStudyMixin:
    """Resolve the URL's study among the caller's own; anyone else's is a 404."""

    def schema_only(self) -> bool:
        return getattr(self, "swagger_fake_view", False)

    def study(self) -> Study:
        if not hasattr(self, "_study"):
            self._study = get_object_or_404(Study, owner=self.request.user,
                                             slug=self.kwargs["study_slug"])
        return self._study


class ItemViewSet(OwnedStudyMixin, mixins.ListModelMixin, viewsets.GenericViewSet):
    serializer_class = ItemSerializer
    queryset = Item.objects.none()

    def get_queryset(self):
        if self.schema_only():
            return Item.objects.none()
        return Item.objects.filter(study=self.study()).order_by("position")


class ParticipantViewSet(OwnedStudyMixin, viewsets.ReadOnlyModelViewSet):
    serializer_class = ParticipantSerializer
    queryset = Participant.objects.none()

    def get_queryset(self):
        if self.schema_only():
            return Participant.objects.none()
        return Participant.objects.filter(study=self.study()).order_by("id")
