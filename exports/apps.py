from django.apps import AppConfig


class ExportsConfig(AppConfig):
    name = "exports"
    verbose_name = "Exports"

    def ready(self) -> None:
        from jobs.kinds import job_kind_register

        from .models import ExportJob

        job_kind_register(ExportJob, "exports.tasks.run_export")
