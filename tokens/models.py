"""Personal access tokens for the API: stored as a SHA-256 digest, shown once."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class AccessToken(models.Model):
    """A researcher's named, expiring key to the API.

    Only the SHA-256 digest of the key is stored (the key is 256 random bits, so a slow password
    hash buys nothing and would cost every request); ``prefix`` is its first characters, kept so
    that the list can tell tokens apart.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="access_tokens")
    class Scope(models.TextChoices):
        READ = "read", "Read only"
        WRITE = "write", "Read and write"

    name = models.CharField(max_length=100)
    # What the token may do, within its owner's role in each study: read (GET, HEAD, OPTIONS)
    # or also write. Tokens made before scopes existed keep what they could do: write.
    scope = models.CharField(max_length=5, choices=Scope.choices, default=Scope.WRITE)
    # A token may be limited to one study (tokens.permissions): any other study is a 404 to it,
    # as a study without a role is, and the study list holds that one. Empty: every study of its
    # owner's. Deleting the study deletes the token (it could reach nothing, and a null here
    # would widen it to every study).
    study = models.ForeignKey("studies.Study", null=True, blank=True, on_delete=models.CASCADE,
                              related_name="+")
    prefix = models.CharField(max_length=16)
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["user", "-created_at"]

    def __str__(self) -> str:
        return f"{self.user_id}:{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None and self.expires_at > timezone.now()
