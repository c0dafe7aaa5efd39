"""Routes of the exports app: downloads, background export jobs, the pseudonym mapping."""

from django.urls import include, path
from rest_framework.routers import SimpleRouter

from . import apis, views

router = SimpleRouter()
router.register(r"studies/(?P<study_slug>[-a-z0-9]+)/exports", apis.ExportJobViewSet,
                basename="exports-api")

app_name = "exports"

urlpatterns = [
    path("studies/<slug:slug>/exports/<slug:what>.<slug:fmt>", views.download, name="download"),
    path("studies/<slug:slug>/exports/jobs/<int:job_id>/", views.job_detail, name="job"),
    path("studies/<slug:slug>/exports/jobs/<int:job_id>/status.json", views.job_status, name="job_status"),
    path("studies/<slug:slug>/exports/jobs/<int:job_id>/download/", views.job_download, name="job_download"),
    path("studies/<slug:slug>/participants/pseudonyms.csv", views.pseudonyms_download, name="pseudonyms"),
    path("api/", include(router.urls)),
]
