"""The API's one pagination: limit/offset with bounds, so no number reaches SQL unchecked."""

from __future__ import annotations

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request

# SQLite and PostgreSQL both take a signed 64-bit OFFSET; a larger number is a server error there.
MAX_OFFSET = 2**62


class Pagination(LimitOffsetPagination):
    """`?limit=` (1–1000, default 100) and `?offset=` (0 up to 2⁶²); anything else is a 400."""

    default_limit = 100
    max_limit = 1000

    def get_offset(self, request: Request) -> int:
        raw = request.query_params.get(self.offset_query_param)
        if raw is None:
            return 0
        try:
            offset = int(raw)
        except ValueError:
            raise ValidationError({"offset": [f"must be a whole number, not {raw[:40]!r}"]}) from None
        if not 0 <= offset <= MAX_OFFSET:
            raise ValidationError({"offset": [f"must be between 0 and {MAX_OFFSET}"]})
        return offset
