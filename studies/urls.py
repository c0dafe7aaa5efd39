from django.urls import include, path

from annotation import import_views

from . import views

app_name = "studies"

urlpatterns = [
    path("", views.study_index, name="list"),
    path("new/", views.study_new, name="new"),
    path("<slug:slug>/", views.study_detail, name="detail"),
    path("<slug:slug>/items/", views.items_upload, name="items_upload"),
    path("<slug:slug>/controls/", views.controls_add, name="controls_add"),
    path("<slug:slug>/invite/", views.invite, name="invite"),
    path("<slug:slug>/preview/", views.preview, name="preview"),
    path("<slug:slug>/open/", views.study_set_status, {"action": "open"}, name="open"),
    path("<slug:slug>/close/", views.study_set_status, {"action": "close"}, name="close"),
    path("<slug:slug>/responses/import/", import_views.responses_upload, name="responses_import"),
    path("<slug:slug>/responses/import/<slug:key>/", import_views.responses_preview,
         name="responses_import_preview"),
    path("<slug:slug>/responses/import/<slug:key>/cancel/", import_views.responses_cancel,
         name="responses_import_cancel"),
    path("<slug:slug>/participants/pseudonyms.csv", import_views.pseudonyms_download,
         name="pseudonyms"),
    path("<slug:slug>/exports/", include("analysis.export_urls")),
]
