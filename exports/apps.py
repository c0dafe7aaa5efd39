from django.apps import AppConfig


class ExportsConfig(AppConfig):
    name = "exports"
    verbose_name = "Exports"

    def ready(self) -> None:
        from jobs.sweep import job_kind_register

        from .models import ExportJob
        from .services import export_job_send

        job_kind_register(ExportJob, export_job_send)
