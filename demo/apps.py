from django.apps import AppConfig


class DemoConfig(AppConfig):
    """The demo studies of `make run` and the tests: built through the other apps' services."""

    name = "demo"
    verbose_name = "Demo studies"
