"""Export routes, included at studies/<slug>/exports/ (every view is owner-scoped)."""

from django.urls import path

from . import export_views

app_name = "exports"

urlpatterns = [
    path("<slug:what>.<slug:fmt>", export_views.download, name="download"),
    path("jobs/<int:job_id>/", export_views.job_detail, name="job"),
    path("jobs/<int:job_id>/status.json", export_views.job_status, name="job_status"),
    path("jobs/<int:job_id>/download/", export_views.job_download, name="job_download"),
]
