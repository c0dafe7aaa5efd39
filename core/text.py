"""Text that cannot be stored: a NUL character or a lone UTF-16 surrogate.

JSON can carry both (``"\\u0000"``, ``"\\ud800"``), and so can a definition file, a form's JSON
field or an API body. PostgreSQL refuses a NUL in text and jsonb (a database error, so a 500),
and a lone surrogate is not Unicode: it cannot be encoded as UTF-8 to be stored or sent back.
`text_problem` says why one string is refused, `first_bad_text` finds the first such string
(or object key) in parsed JSON and names its place, as a definition's problems are named
(``design.seed``, ``questions[0].prompt``).
"""

from __future__ import annotations

NUL_REFUSED = "may not contain a NUL character (\\u0000)"
SURROGATE_REFUSED = "may not contain a lone surrogate (\\ud800–\\udfff): it is not Unicode text"


def text_problem(text: str) -> str | None:
    """Why ``text`` cannot be stored, or None.

    >>> text_problem("fine é 😀"), text_problem("a\\x00b") == NUL_REFUSED
    (None, True)
    >>> text_problem("a\\ud800") == SURROGATE_REFUSED
    True
    """
    if "\x00" in text:
        return NUL_REFUSED
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return SURROGATE_REFUSED
    return None


def printable(name: str) -> str:
    """``name`` with NUL and lone surrogates escaped, safe to show or send back in an error.

    >>> printable("ti\\x00tle\\ud800")
    'ti\\\\x00tle\\\\ud800'
    """
    return name.encode("utf-8", "backslashreplace").decode("utf-8").replace("\x00", "\\x00")


def first_bad_text(data: object, path: str = "") -> tuple[str, str] | None:
    """The first string (value or key) in parsed JSON that `text_problem` refuses, as
    ``(path, why)``, or None. Iterative: any depth is safe.

    >>> first_bad_text({"title": "ok", "questions": [{"key": "q", "prompt": "a\\x00"}]})[0]
    'questions[0].prompt'
    >>> first_bad_text({"a\\x00": 1})[0], first_bad_text(["x", 2, None])
    ('a\\\\x00', None)
    """
    stack: list[tuple[str, object]] = [(path, data)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, str):
            why = text_problem(value)
            if why:
                return where, why
        elif isinstance(value, dict):
            for key, child in reversed(list(value.items())):
                name = printable(str(key))
                inner = f"{where}.{name}" if where else name
                why = text_problem(key) if isinstance(key, str) else None
                if why:
                    return inner, f"a key {why}"
                stack.append((inner, child))
        elif isinstance(value, list | tuple):
            stack.extend((f"{where}[{i}]", child) for i, child in reversed(list(enumerate(value))))
    return None
