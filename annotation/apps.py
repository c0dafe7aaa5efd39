from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation"

    def ready(self) -> None:
        from jobs.sweep import job_kind_register

        from .imports import import_job_send
        from .models import ImportJob

        job_kind_register(ImportJob, import_job_send)
