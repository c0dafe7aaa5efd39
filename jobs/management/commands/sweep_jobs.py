"""Sweep the background jobs once, as Celery beat does every CONCORD_SWEEP_SECONDS."""

from django.core.management.base import BaseCommand

from jobs.sweep import jobs_sweep


class Command(BaseCommand):
    help = ("Send the jobs that were saved but never sent, and send again (or fail, after "
            "CONCORD_JOB_MAX_ATTEMPTS) the running jobs whose heartbeat is stale.")
    # No system checks: they import every page's code (about 2 s), as the data commands do
    # not either (studies.management.commands._common.DataCommand).
    requires_system_checks: list[str] = []  # noqa: RUF012 (Django's own attribute)

    def handle(self, *args: object, **options: object) -> None:
        report = jobs_sweep()
        for what, names in report.as_dict().items():
            self.stdout.write(f"{what}: {', '.join(names) if names else 'none'}")
