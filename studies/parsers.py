"""The API's JSON parser: DRF's, refusing what would otherwise end in a 500 with a 400 that says
why (settings.REST_FRAMEWORK["DEFAULT_PARSER_CLASSES"]; in studies beside the pagination every
app's API uses, since an app may not import config; docs/api.md, "Errors").

- JSON nested deeper than `MAX_DEPTH` levels: Python's parser recurses, and about 2 000 levels
  raise `RecursionError`, which DRF does not catch. Counted before parsing, as the answer
  endpoint does (`core.tabular.json_too_deep`, linear and recursion-free).
- A string (or an object's key) holding a NUL character or a lone UTF-16 surrogate
  (``"\\u0000"``, ``"\\ud800"``): PostgreSQL refuses a NUL in text and jsonb, and a lone surrogate
  is not Unicode text that can be stored or sent back as UTF-8. The 400 names the field, in
  the form of a serializer's errors (``{"title": ["…"]}``; ``design.seed``, ``questions[0].key``
  for nested ones), whatever the view does with the body.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Mapping
from typing import Any

from rest_framework import parsers
from rest_framework.exceptions import ParseError, ValidationError
from rest_framework.utils.json import strict_constant

from core.tabular import json_too_deep
from core.text import first_bad_text

# No request body of the API nests more than a few levels (a definition's questions, their
# scales and labels: 5); far below the ~2 000 at which Python's parser fails.
MAX_DEPTH = 64


def _encoding(parser_context: Mapping[str, Any]) -> str:
    """The body's text encoding as DRF's parsers read it (a text codec only: DRF's check)."""
    encoding: str = parsers.get_encoding(parser_context)  # type: ignore[attr-defined]
    return encoding


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser with a nesting limit and no NUL or lone surrogate in any string."""

    def parse(self, stream: Any, media_type: str | None = None,
              parser_context: Mapping[str, Any] | None = None) -> Any:
        encoding = _encoding(parser_context or {})
        try:
            text = codecs.getreader(encoding)(stream).read()
        except UnicodeError as exc:
            raise ParseError(f"JSON parse error - the body is not {encoding} text: {exc}") from None
        if json_too_deep(text, MAX_DEPTH):
            raise ParseError(f"JSON parse error - nested deeper than {MAX_DEPTH} levels")
        try:
            data = json.loads(text, parse_constant=strict_constant if self.strict else None)
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
        except RecursionError:  # only if the count above was fooled; never a 500
            raise ParseError(f"JSON parse error - nested deeper than {MAX_DEPTH} levels") from None
        bad = first_bad_text(data)
        if bad:
            raise ValidationError({bad[0] or "detail": [bad[1]]})
        return data
