from django.contrib import admin
from django.http import HttpRequest

from .models import AccessToken


@admin.register(AccessToken)
class AccessTokenAdmin(admin.ModelAdmin[AccessToken]):
    """Operators can see and revoke tokens; the digest is useless to them and never a key."""

    list_display = ("name", "user", "prefix", "scope", "study", "created_at", "expires_at",
                    "last_used_at", "revoked_at")
    list_filter = ("revoked_at",)
    readonly_fields = ("user", "name", "prefix", "digest", "scope", "study", "created_at",
                       "expires_at", "last_used_at")
    search_fields = ("name", "user__username", "prefix")

    def has_add_permission(self, request: HttpRequest, obj: AccessToken | None = None) -> bool:
        return False
