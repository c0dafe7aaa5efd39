"""Routes of the imports app: response import (upload, preview, confirm) and the pages of import
jobs. An item upload is a POST to the study's item list (studies:items_upload), which
config/urls.py sends to `imports.views.items_upload`."""

from django.urls import path

from . import views

app_name = "imports"

urlpatterns = [
    # Beside studies:new and studies:new_definition; "new" is not a study's slug there.
    path("studies/new/bundle/", views.bundle_import_view, name="bundle_import"),
    path("studies/<slug:slug>/items/coreference/", views.coref_upload, name="coref_upload"),
    path("studies/<slug:slug>/responses/import/", views.responses_upload,
         name="responses_import"),
    # An import's page: a response file's check (the preview), then its import; a large item
    # upload's import. A small file's job runs in the request, a large one's by a worker.
    path("studies/<slug:slug>/imports/<int:job_id>/", views.import_job_detail,
         name="import_job"),
    # A kept wide file's columns, mapped on screen before its check (imports.columns).
    path("studies/<slug:slug>/imports/<int:job_id>/columns/", views.columns_view,
         name="columns"),
    path("studies/<slug:slug>/imports/<int:job_id>/status.json", views.import_job_status_view,
         name="import_job_status"),
    path("studies/<slug:slug>/imports/<int:job_id>/confirm/", views.import_job_confirm_view,
         name="import_job_confirm"),
    path("studies/<slug:slug>/imports/<int:job_id>/cancel/", views.import_job_cancel_view,
         name="import_job_cancel"),
]
