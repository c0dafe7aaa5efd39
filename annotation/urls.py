"""Routes of the annotation app: the annotator's pages, response import and the responses API."""

from django.urls import include, path
from rest_framework.routers import SimpleRouter

from . import apis, views

app_name = "annotation"

router = SimpleRouter()
router.register(r"studies/(?P<study_slug>[-a-z0-9]+)/responses", apis.ResponseViewSet,
                basename="response")

urlpatterns = [
    # Answers first: the most frequent request (see config/urls.py).
    path("a/<str:token>/answer/", views.answer, name="answer"),
    path("a/<str:token>/", views.consent, name="consent"),
    path("a/<str:token>/instructions/", views.instructions, name="instructions"),
    path("a/<str:token>/next/", views.next_item, name="next"),
    path("a/<str:token>/item/<int:position>/", views.item_at, name="item"),
    path("a/<str:token>/done/", views.done, name="done"),
    path("join/<str:open_token>/", views.join, name="join"),
    path("studies/<slug:slug>/responses/import/", views.responses_upload,
         name="responses_import"),
    path("studies/<slug:slug>/responses/import/<slug:key>/", views.responses_preview,
         name="responses_import_preview"),
    path("studies/<slug:slug>/responses/import/<slug:key>/cancel/", views.responses_cancel,
         name="responses_import_cancel"),
    # Background imports of large uploads (responses here, items from the study's page).
    path("studies/<slug:slug>/imports/<int:job_id>/", views.import_job_detail,
         name="import_job"),
    path("studies/<slug:slug>/imports/<int:job_id>/status.json", views.import_job_status_view,
         name="import_job_status"),
    path("studies/<slug:slug>/imports/<int:job_id>/confirm/", views.import_job_confirm_view,
         name="import_job_confirm"),
    path("studies/<slug:slug>/imports/<int:job_id>/cancel/", views.import_job_cancel_view,
         name="import_job_cancel"),
    path("api/", include(router.urls)),
]
