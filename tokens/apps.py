from django.apps import AppConfig


class TokensConfig(AppConfig):
    name = "tokens"
    verbose_name = "Personal access tokens"

    def ready(self) -> None:
        # The OpenAPI schema names the token scheme (drf-spectacular finds the extension on import).
        from . import schema  # noqa: F401
