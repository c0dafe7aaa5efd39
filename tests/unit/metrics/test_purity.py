"""core/metrics is pure: no Django, nothing fetched at run time."""

import ast
import pathlib

PACKAGE = pathlib.Path(__file__).resolve().parents[3] / "analysis" / "metrics"


def imported_modules(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module


def test_it_never_imports_django_or_network_modules():
    forbidden = ("django", "requests", "urllib", "http", "nltk.downloader")
    for path in sorted(PACKAGE.glob("*.py")):
        for module in imported_modules(path):
            assert not module.startswith(forbidden), f"{path.name} imports {module}"
