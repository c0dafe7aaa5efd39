from django.apps import AppConfig


class ImportsConfig(AppConfig):
    name = "imports"
    verbose_name = "Imports"

    def ready(self) -> None:
        from jobs.kinds import job_kind_register

        from .models import ImportJob

        job_kind_register(ImportJob, "imports.tasks.run_import")
