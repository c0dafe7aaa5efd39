"""Routes of the judges app: the judges page of a study and the judges API."""

from django.urls import include, path
from rest_framework.routers import SimpleRouter

from . import apis, views

app_name = "judges"

router = SimpleRouter()
router.register(r"studies/(?P<study_slug>[-a-z0-9]+)/judges", apis.JudgeViewSet,
                basename="judge")

urlpatterns = [
    path("studies/<slug:slug>/judges/", views.judges_page, name="list"),
    path("studies/<slug:slug>/judges/runs/<int:run_id>/delete/", views.run_delete,
         name="run_delete"),
    path("studies/<slug:slug>/judges/<int:judge_id>/delete/", views.judge_delete_view,
         name="judge_delete"),
    path("api/", include(router.urls)),
]
