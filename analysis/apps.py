from django.apps import AppConfig


class AnalysisConfig(AppConfig):
    name = "analysis"
    verbose_name = "Analysis"

    def ready(self) -> None:
        from django.conf import settings

        from core.stats._threads import limit_threads
        from jobs.kinds import job_kind_register

        limit_threads(settings.CONCORD_ANALYSIS_THREADS)

        from .models import AnalysisRun

        job_kind_register(AnalysisRun, "analysis.tasks.run_analysis")
