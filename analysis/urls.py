"""Routes of the analysis app: the results dashboard, its runs and charts, and the results API."""

from django.urls import include, path
from rest_framework.routers import SimpleRouter

from . import apis, views

app_name = "analysis"

router = SimpleRouter()
router.register(r"studies/(?P<study_slug>[-a-z0-9]+)/runs", apis.AnalysisRunViewSet,
                basename="run")

urlpatterns = [
    path("studies/<slug:slug>/results/", views.dashboard, name="dashboard"),
    path("studies/<slug:slug>/results/annotators/<str:pseudonym>/", views.annotator,
         name="annotator"),
    path("studies/<slug:slug>/results/runs/", views.run_start, name="run_start"),
    path("studies/<slug:slug>/results/runs/<int:run_id>/status.json", views.run_status,
         name="run_status"),
    path("studies/<slug:slug>/results/charts/<slug:name>.vl.json", views.chart_spec,
         name="chart_spec"),
    path("studies/<slug:slug>/results/charts/<slug:name>.<str:fmt>", views.chart_values,
         name="chart_data"),
    path("studies/<slug:slug>/results/runs/<int:run_id>/methods/<slug:name>/",
         views.run_method, name="run_method"),
    # How each statistic is computed: documentation, for any researcher signed in.
    path("methods/references/", views.references, name="references"),
    path("methods/<slug:name>/", views.method, name="method"),
    path("api/studies/<slug:study_slug>/results/", apis.results, name="results"),
    path("api/studies/<slug:study_slug>/results/items/<str:section>/", apis.result_items,
         name="result_items"),
    path("api/studies/<slug:study_slug>/results/systems/<str:section>/", apis.system_results,
         name="system_results"),
    path("api/studies/<slug:study_slug>/results/comparisons/<str:section>/",
         apis.comparison_results, name="comparison_results"),
    path("api/", include(router.urls)),
]
