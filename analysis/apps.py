from django.apps import AppConfig


class AnalysisConfig(AppConfig):
    name = "analysis"
    verbose_name = "Analysis"

    def ready(self) -> None:
        from jobs.sweep import job_kind_register

        from .models import AnalysisRun
        from .services import analysis_run_send

        job_kind_register(AnalysisRun, analysis_run_send)
