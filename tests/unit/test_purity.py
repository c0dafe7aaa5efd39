"""The core package is pure: importing any module of it never imports Django."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def core_modules() -> list[str]:
    modules = []
    for path in sorted((ROOT / "core").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules.append(".".join(parts))
    return modules


def test_it_finds_every_core_module():
    modules = core_modules()
    assert {"core", "core.stats.alpha", "core.metrics.coref", "core.results", "core.data",
            "core.formats", "core.problems", "core.tabular", "core.items",
            "core.responses"} <= set(modules)


def test_it_imports_every_core_module_without_django():
    script = (
        "import importlib, sys\n"
        f"for name in {core_modules()!r}:\n"
        "    importlib.import_module(name)\n"
        "leaked = sorted(m for m in sys.modules if m == 'django' or m.startswith('django.'))\n"
        "assert not leaked, leaked\n"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}  # no DJANGO_SETTINGS_MODULE
    completed = subprocess.run(  # noqa: S603 - fixed interpreter, our own script
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120,
        env=env,
    )
    assert completed.returncode == 0, completed.stderr
