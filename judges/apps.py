from django.apps import AppConfig


class JudgesConfig(AppConfig):
    name = "judges"
    verbose_name = "Judges"

    def ready(self) -> None:
        # A methods bundle with judges replays them: `imports` sits below this app and calls
        # the replay through its registry (it may not import an app above it).
        from imports.bundles import bundle_part_register

        from .bundles import MEMBERS, judges_replay

        bundle_part_register(members=MEMBERS, replay=judges_replay)
