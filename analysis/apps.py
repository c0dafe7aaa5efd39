from django.apps import AppConfig


class AnalysisConfig(AppConfig):
    name = "analysis"
    verbose_name = "Analysis"

    def ready(self) -> None:
        # Celery's autodiscovery imports `analysis.tasks` only; the export task lives apart.
        from . import export_tasks  # noqa: F401
