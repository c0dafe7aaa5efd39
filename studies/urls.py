"""Routes of the studies app: the researcher's study pages and the studies API."""

from django.urls import include, path
from rest_framework.routers import SimpleRouter

from . import apis, views

app_name = "studies"

router = SimpleRouter()
router.register("studies", apis.StudyViewSet, basename="study")
router.register(r"studies/(?P<study_slug>[-a-z0-9]+)/items", apis.ItemViewSet, basename="item")
router.register(r"studies/(?P<study_slug>[-a-z0-9]+)/system-scores", apis.SystemScoreViewSet,
                basename="system-score")
router.register(r"studies/(?P<study_slug>[-a-z0-9]+)/participants", apis.ParticipantViewSet,
                basename="participant")
router.register(r"studies/(?P<study_slug>[-a-z0-9]+)/members", apis.MemberViewSet,
                basename="member")

urlpatterns = [
    path("studies/", views.study_index, name="list"),
    path("studies/new/", views.study_new, name="new"),
    path("studies/new/definition/", views.study_new_from_definition, name="new_definition"),
    path("studies/<slug:slug>/", views.study_detail, name="detail"),
    path("studies/<slug:slug>/items/", views.items_upload, name="items_upload"),
    path("studies/<slug:slug>/items/<int:item_pk>/", views.item_detail, name="item"),
    path("studies/<slug:slug>/items/<int:item_pk>/edit/", views.item_edit, name="item_edit"),
    path("studies/<slug:slug>/items/<int:item_pk>/delete/", views.item_delete_view,
         name="item_delete"),
    path("studies/<slug:slug>/system-scores/", views.system_scores_page, name="system_scores"),
    path("studies/<slug:slug>/system-scores/delete/", views.system_scores_delete_view,
         name="system_scores_delete"),
    path("studies/<slug:slug>/comparisons/", views.comparisons_build, name="comparisons"),
    path("studies/<slug:slug>/controls/", views.controls_add, name="controls_add"),
    path("studies/<slug:slug>/invite/", views.invite, name="invite"),
    path("studies/<slug:slug>/preview/", views.preview, name="preview"),
    path("studies/<slug:slug>/open/", views.study_set_status, {"action": "open"}, name="open"),
    path("studies/<slug:slug>/pause/", views.study_set_status, {"action": "pause"}, name="pause"),
    path("studies/<slug:slug>/close/", views.study_set_status, {"action": "close"}, name="close"),
    path("studies/<slug:slug>/archive/", views.study_set_status, {"action": "archive"},
         name="archive"),
    path("studies/<slug:slug>/unarchive/", views.study_set_status, {"action": "unarchive"},
         name="unarchive"),
    path("studies/<slug:slug>/delete/", views.study_delete_view, name="delete"),
    path("studies/<slug:slug>/history/", views.study_history, name="history"),
    path("studies/<slug:slug>/participants/", views.participants_list, name="participants"),
    path("studies/<slug:slug>/participants/<int:pk>/revoke/", views.participant_action,
         {"action": "revoke"}, name="participant_revoke"),
    path("studies/<slug:slug>/participants/<int:pk>/exclude/", views.participant_action,
         {"action": "exclude"}, name="participant_exclude"),
    path("studies/<slug:slug>/participants/<int:pk>/include/", views.participant_action,
         {"action": "include"}, name="participant_include"),
    path("studies/<slug:slug>/participants/<int:pk>/delete/", views.participant_action,
         {"action": "delete"}, name="participant_delete"),
    path("studies/<slug:slug>/settings/", views.study_settings, name="settings"),
    path("studies/<slug:slug>/definition.json", views.definition_download, name="definition"),
    path("studies/<slug:slug>/clone/", views.study_clone_view, name="clone"),
    path("studies/<slug:slug>/sharing/", views.sharing, name="sharing"),
    path("studies/<slug:slug>/sharing/invite/", views.member_invite_view, name="member_invite"),
    path("studies/<slug:slug>/sharing/<int:pk>/role/", views.member_role, name="member_role"),
    path("studies/<slug:slug>/sharing/<int:pk>/remove/", views.member_remove_view,
         name="member_remove"),
    path("api/", include(router.urls)),
]
