"""Sweep the background jobs once, as Celery beat does every CONCORD_SWEEP_SECONDS."""

from django.core.management.base import BaseCommand

from jobs.sweep import jobs_sweep


class Command(BaseCommand):
    help = ("Send the jobs that were saved but never sent, and send again (or fail, after "
            "CONCORD_JOB_MAX_ATTEMPTS) the running jobs whose heartbeat is stale.")

    def handle(self, *args: object, **options: object) -> None:
        report = jobs_sweep()
        for what, names in report.as_dict().items():
            self.stdout.write(f"{what}: {', '.join(names) if names else 'none'}")
