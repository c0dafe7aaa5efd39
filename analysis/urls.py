from django.urls import path

from . import views

app_name = "analysis"

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("runs/", views.run_start, name="run_start"),
    path("runs/<int:run_id>/status.json", views.run_status, name="run_status"),
    path("charts/<slug:name>.vl.json", views.chart_spec, name="chart_spec"),
    path("charts/<slug:name>.<str:fmt>", views.chart_values, name="chart_data"),
]
