"""analysis/stats and analysis/metrics are pure: importing them never imports Django."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def pure_modules():
    modules = []
    for package in ("analysis/stats", "analysis/metrics"):
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules.append(".".join(parts))
    return modules


def test_it_finds_the_stats_modules():
    assert "analysis.stats.alpha" in pure_modules()


def test_it_imports_every_pure_module_without_django():
    script = (
        "import importlib, sys\n"
        f"for name in {pure_modules()!r}:\n"
        "    importlib.import_module(name)\n"
        "leaked = sorted(m for m in sys.modules if m == 'django' or m.startswith('django.'))\n"
        "assert not leaked, leaked\n"
    )
    completed = subprocess.run(  # noqa: S603 - fixed interpreter, our own script
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert completed.returncode == 0, completed.stderr
