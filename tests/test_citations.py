"""Code, docs and pages cite papers by author and year, and docs/references.md lists every one.

Pure: it reads files only (no Django, no database), so it also runs under ``-p no:django``.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
REFERENCES = ROOT / "docs" / "references.md"
STATISTICS_PAGES = sorted((ROOT / "docs" / "statistics").glob("*.md"))
SKIPPED = (".venv/", "static/vendor/", "node_modules/", "tests/fixtures/")

# How papers used to be cited: by the number of their file in a folder the repository does not
# ship, or by an internal specification nobody outside can open. The pattern is assembled from
# pieces so that this file does not match it.
FORBIDDEN = re.compile(
    "|".join([r"PRODUCT\.md", r"seeds?[ _]?0{2}[0-4]", "shared" + "/" + "seeds"]), re.IGNORECASE)

# An author–year citation: surnames (capitalised words), optionally "et al." or "and <surnames>",
# then a year, the year possibly in parentheses ("Borovikova et al. (2022, §4)").
_NAME = r"[A-Z][\w'’-]+"
CITATION = re.compile(
    rf"(?:{_NAME} )*{_NAME}(?: et al\.| (?:and|&) (?:{_NAME} )*{_NAME})? \(?(?:1[89]|20)\d\d\b")
# A month before a year is a date, not a citation ("November 2026").
MONTHS = {"January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December"}


def tracked_files() -> list[str]:
    """Return the repository's files as git tracks them, or every file outside a git checkout."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60,
        ).stdout.decode()
        names = [name for name in listed.split("\0") if name]
    except (OSError, subprocess.SubprocessError):
        # A source tree without .git (an unpacked archive, a container): walk it instead.
        names = []
        for folder, dirs, files in os.walk(ROOT):
            dirs[:] = [d for d in dirs if d not in {".git", ".venv", "node_modules", "__pycache__"}]
            names += [str((Path(folder) / f).relative_to(ROOT)) for f in files]
    return sorted(name for name in names if not name.startswith(SKIPPED))


def normalised(text: str) -> str:
    """Join lines and spell "&" as "and", so a citation reads the same wherever it is wrapped."""
    return re.sub(r"\s+", " ", text).replace(" & ", " and ")


def cited_keys(text: str) -> set[str]:
    """Return the author–year citations of a text, as "Surname[ et al.| and Surname] YYYY"."""
    keys = set()
    for match in CITATION.finditer(normalised(text)):
        words = match.group(0).replace("(", "").split(" ")
        if words[-2] not in MONTHS:
            keys.add(" ".join(words))
    return keys


def listed(key: str, references: str) -> bool:
    """Tell whether docs/references.md names the work cited as ``key``.

    A citation may start with a capitalised word that is not a name ("See Krippendorff 2011"),
    so the key or any shorter tail of it (down to surname and year) counts.
    """
    words = key.split(" ")
    # A tail starts at a surname: "et al. 2023" alone would match any first author's 2023.
    tails = (" ".join(words[i:]) for i in range(len(words) - 1) if words[i][:1].isupper())
    return any(re.search(rf"(?<![\w-]){re.escape(tail)}\b", references) for tail in tails)


def test_it_lists_the_files_it_checks():
    files = tracked_files()
    assert "docs/references.md" in files and "core/stats/trust.py" in files
    assert not [name for name in files if name.startswith(SKIPPED)]


def test_no_file_cites_an_unshipped_document_or_a_paper_by_number():
    offending = []
    for name in tracked_files():
        path = ROOT / name
        if not path.is_file():  # deleted in the working tree, not yet committed
            continue
        content = path.read_bytes()
        if b"\0" in content:  # binary
            continue
        for number, line in enumerate(content.decode("utf-8", "replace").splitlines(), 1):
            if FORBIDDEN.search(line):
                offending.append(f"{name}:{number}: {line.strip()}")
    assert not offending, "cite by author and year (docs/references.md):\n" + "\n".join(offending)


def test_it_reads_author_year_citations():
    text = ("Borovikova et al. (2022, §4) and Beigman Klebanov &\nBeigman 2009; see Krippendorff "
            "2011, not the run of November 2026.")
    assert cited_keys(text) == {"Borovikova et al. 2022", "Beigman Klebanov and Beigman 2009",
                                "Krippendorff 2011"}
    references = normalised(REFERENCES.read_text(encoding="utf-8"))
    assert listed("Borovikova et al. 2022", references)
    assert not listed("Borovikova et al. 2023", references)
    assert not listed("Smith 2022", references)


@pytest.mark.parametrize("page", STATISTICS_PAGES, ids=lambda page: page.name)
def test_every_work_a_statistics_page_cites_is_in_the_references(page):
    references = normalised(REFERENCES.read_text(encoding="utf-8"))
    keys = cited_keys(page.read_text(encoding="utf-8"))
    assert keys, f"{page.name} cites no paper by author and year"
    missing = sorted(key for key in keys if not listed(key, references))
    assert not missing, f"{page.name} cites works docs/references.md does not list: {missing}"


@pytest.mark.parametrize("page", STATISTICS_PAGES, ids=lambda page: page.name)
def test_every_statistics_page_ends_with_its_references(page):
    text = page.read_text(encoding="utf-8")
    last_section = re.split(r"^## ", text, flags=re.MULTILINE)[-1]
    assert last_section.startswith("References\n"), f"{page.name} must end with ## References"
    assert "](../references.md)" in last_section, f"{page.name}: link docs/references.md"
    assert cited_keys(last_section), f"{page.name}: name the works by author and year"


def test_the_statistics_pages_are_all_checked():
    assert {page.name for page in STATISTICS_PAGES} >= {
        "alpha.md", "competence.md", "correlation-intervals.md", "duplicates.md",
        "gaps-and-weights.md", "heuristics.md", "noise.md", "quality.md", "trust.md",
        "williams.md"}


def test_every_work_the_other_docs_and_pages_cite_is_in_the_references():
    references = normalised(REFERENCES.read_text(encoding="utf-8"))
    pages = [*(ROOT / "docs").glob("*.md"), *(ROOT / "templates").rglob("*.html"),
             *(ROOT / "templates").rglob("*.md")]
    missing = sorted(
        f"{page.relative_to(ROOT)}: {key}"
        for page in pages if page != REFERENCES
        for key in cited_keys(page.read_text(encoding="utf-8")) if not listed(key, references))
    assert not missing, "works missing from docs/references.md:\n" + "\n".join(missing)
