"""The method pages: docs/statistics/*.md and docs/references.md, rendered by the app.

One source for the repository's documentation and the dashboard's "how it is computed" links:
the page reads the Markdown file at request time (cached while the file is unchanged), renders it
with the `markdown` package and sanitises it with nh3's allow-list, as researcher Markdown is
(`studies.sanitize`).  Links between the documents become the app's URLs; a link to a document
the app does not serve keeps its text and loses its address.  Only the names found in
docs/statistics when the process starts are pages (no path is ever built from a request).
"""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import markdown as md
import nh3
from django.conf import settings as django_settings
from django.utils.html import escape
from django.utils.text import slugify

from core.settings import knobs
from studies.sanitize import DOC_TAGS

DOCS = Path(django_settings.BASE_DIR) / "docs"
STATISTICS = DOCS / "statistics"
REFERENCES = "references"
# The whitelist: a request names one of these or gets a 404.
METHODS: tuple[str, ...] = tuple(sorted(p.stem for p in STATISTICS.glob("*.md")))

# The settings each method reads, by key path or section prefix of `AnalysisSettings`.
METHOD_SETTINGS: Mapping[str, tuple[str, ...]] = {
    "alpha": ("level", "simple_threshold", "bootstrap_samples", "bootstrap_confidence", "seed",
              "outlier_threshold"),
    "trust": ("level", "trust_variant", "trust_max_exact", "trust_samples",
              "trust_budget_s", "trust_max_annotators", "outlier_threshold", "simple_threshold", "seed"),
    "competence": ("seed",),
    "correlation-intervals": ("correlation_intervals", "bootstrap_samples",
                              "bootstrap_confidence", "seed"),
    "williams": ("comparison_alpha",),
    "heuristics": ("heuristics.",),
    "quality": ("quality.",),
    "noise": ("noise_confidence", "noise_max_gamma"),
    "duplicates": ("quality.duplicate_inconsistency.",),
    "gaps-and-weights": (),
    "systems": ("systems_resampling", "systems_test", "systems_correction", "systems_bootstrap",
                "systems_permutations", "systems_alpha", "bootstrap_confidence", "seed"),
    "comparisons": ("comparisons_bootstrap", "comparisons_splits", "bootstrap_confidence",
                    "seed"),
    "judges": ("judge_epsilon", "judge_q", "judges_as_annotators", "level", "bootstrap_samples",
               "bootstrap_confidence", "seed"),
}

# A link's target (a path relative to docs/) -> (page name or REFERENCES, fragment)
Link = Callable[[str, str], str]

TAGS = DOC_TAGS | {"sup", "sub"}
ATTRIBUTES = {"a": {"href", "title"}, "th": {"align"}, "td": {"align"},
              **{f"h{n}": {"id"} for n in range(1, 7)}}
_REFERENCE_ITEM = re.compile(r"<li>(\s*(?:<p>)?\s*<strong>([^<]+)</strong>)")


@dataclass(frozen=True)
class Document:
    title: str
    html: str  # without the title's heading
    cited: tuple[str, ...] = ()  # the works of docs/references.md the page cites


def reference_anchor(key: str) -> str:
    """Return the references page's anchor of a work cited as ``key`` ("Dawid and Skene 1979")."""
    return "ref-" + slugify(key)


def _source(name: str) -> Path:
    if name == REFERENCES:
        return DOCS / "references.md"
    if name not in METHODS:
        raise KeyError(name)
    return STATISTICS / f"{name}.md"


def _target(href: str, folder: str) -> tuple[str, str] | None:
    """Return (page, fragment) of a relative link to a document the app serves, else None."""
    path, _, fragment = href.partition("#")
    if not path.endswith(".md") or "://" in path or path.startswith("/"):
        return None
    resolved = posixpath.normpath(posixpath.join(folder, path))
    if resolved == "references.md":
        return REFERENCES, fragment
    head, _, stem = resolved.removesuffix(".md").rpartition("/")
    if head == "statistics" and stem in METHODS:
        return stem, fragment
    return None


def render(name: str, link: Link) -> Document:
    """Return the method page (or the references page) ``name`` as sanitised HTML.

    ``link(page, fragment)`` gives the app's URL of another page (a run's, or the general
    one); raises ``KeyError`` for a name that is not a page.
    """
    path = _source(name)
    cached = _render(path, path.stat().st_mtime_ns)
    html = _MARKER.sub(lambda m: f'href="{escape(link(m[1], m[2] or ""))}"', cached.html)
    return Document(cached.title, html, cached.cited)


def references_of(document: Document, link: Link) -> list[str]:
    """Return the full entries (HTML list items) of the works ``document`` cites."""
    if not document.cited:
        return []
    html = render(REFERENCES, link).html
    items = []
    for key in document.cited:
        match = re.search(rf'<li id="{reference_anchor(key)}">.*?</li>', html, flags=re.DOTALL)
        if match:
            items.append(match[0])
    return items


# Links to served pages are cached as this marker, then given the URLs of the request's context.
_MARKER = re.compile(r'href="\./__page__/([a-z0-9-]+)(?:#([^"]*))?"')


_FILE_NAMED = re.compile(r'(<a href="\./__page__/([a-z0-9-]+)[^"]*"[^>]*>)(?:\.\./)?[\w./-]+\.md</a>')


def title_of(name: str) -> str:
    """Return the title of page ``name``: its first heading, without Markdown marks."""
    if name == REFERENCES:
        return "References"
    with _source(name).open(encoding="utf-8") as f:
        first = f.readline()
    return first.lstrip("# ").strip().replace("*", "").replace("`", "") or name


# Paragraphs for developers ("Code: `core/stats/…`. Tests: …", "Tests: …", "Tested (…)", and those
# headed "**Two engines.**", "**Speed.**"): the page is for researchers.
_CODE_PARAGRAPH = re.compile(
    r"^(?:(?:Code|Tests): |Tested \(|\*\*(?:Two engines|Speed|Independent implementation)\.?\*\*)"
    r".*?(?:\n\s*\n|\Z)", re.MULTILINE | re.DOTALL)
# A section for developers, to the next heading of its level or above: one whose heading says
# "(for developers…)", or begins with one of these (the code's functions, engines, benchmarks,
# the tests' checks). Their text names files, numpy calls and signatures; the rest of the page
# says what is computed.
DEVELOPER_HEADINGS = ("API", "Functions", "Performance", "Checks", "Ours or crowd-kit",
                      "The engine", "Exhaustive engines", "Distributed exact mode",
                      "How an analysis run fans out", "Low-level helpers", "Shapes")
_HEADING = re.compile(r"^(#{2,6}) ([^\n]*)\n", re.MULTILINE)


def _without_developer_sections(text: str) -> str:
    out, position, skip_level = [], 0, 0
    for m in _HEADING.finditer(text):
        level, heading = len(m[1]), m[2].strip()
        if skip_level and level > skip_level:
            continue  # a subsection of a section left out
        if skip_level:
            position, skip_level = m.start(), 0
        if "(for developers" in heading or heading.startswith(DEVELOPER_HEADINGS):
            out.append(text[position:m.start()])
            skip_level = level
    out.append("" if skip_level else text[position:])
    return "".join(out)


# A list item nested with 2–3 spaces (as GitHub reads it); Python-Markdown wants 4.
_NESTED_ITEM = re.compile(r"^ {2,3}(?=(?:[-*+]|\d+\.) )", re.MULTILINE)


def for_readers(text: str) -> str:
    """The Markdown of a docs page as the app shows it: without the paragraphs that name the
    code and tests and the sections for developers, and with nested lists indented the way
    Python-Markdown reads them."""
    return _NESTED_ITEM.sub("    ", _CODE_PARAGRAPH.sub("", _without_developer_sections(text)))


@functools.lru_cache(maxsize=32)
def _render(path: Path, mtime_ns: int) -> Document:
    del mtime_ns  # part of the cache key only: an edited file is read again
    text = path.read_text(encoding="utf-8")
    title = next((line[2:].strip() for line in text.splitlines() if line.startswith("# ")),
                 path.stem)
    folder = "statistics" if path.parent == STATISTICS else ""
    html = md.markdown(for_readers(text), extensions=["extra", "sane_lists", "toc"],
                       output_format="html")

    def attribute(tag: str, attr: str, value: str) -> str | None:
        if tag == "a" and attr == "href" and not value.startswith(
                ("http:", "https:", "mailto:", "#")):
            target = _target(value, folder)
            if target is None:
                return None  # a document the app does not serve: its text only
            page, fragment = target
            return f"./__page__/{page}" + (f"#{slugify(fragment)}" if fragment else "")
        return value

    html = nh3.clean(html, tags=TAGS, attributes=ATTRIBUTES, attribute_filter=attribute,
                     url_schemes={"http", "https", "mailto"},
                     link_rel="noopener noreferrer")
    # A link that reads as a file name ("references.md") reads as the page's title instead.
    html = _FILE_NAMED.sub(lambda m: f"{m[1]}{escape(title_of(m[2]))}</a>", html)
    html = for_reading(html, folder)
    if path == DOCS / "references.md":
        # every listed work gets the anchor the dashboard's citations point to
        html = _REFERENCE_ITEM.sub(lambda m: f'<li id="{reference_anchor(m[2])}">{m[1]}', html)
    html = re.sub(r"^\s*<h1[^>]*>.*?</h1>\s*", "", html, count=1, flags=re.DOTALL)
    flat = re.sub(r"\(((?:1[89]|20)\d\d)", r"\1", re.sub(r"\s+", " ", text))  # "X (2022" = "X 2022"
    cited = () if path == DOCS / "references.md" else tuple(
        key for key in reference_keys() if key in flat)
    return Document(title.replace("*", "").replace("`", ""), html, cited)


# What a reader should not meet as text (issue 23, point 10): a file of the code or a folder of
# the repository in inline code, and a setting's key where its label can stand.
_CODE_PATH = re.compile(r"[\w.-]*/[\w./<>&;-]*|[\w/-]+\.(?:py|toml)|python -m [\w.]+")
_CODE = re.compile(r"(\(\s*)?<code>([^<]*)</code>(\s*\))?")
_UNSERVED_LINK = re.compile(r"<a(?: rel=\"noopener noreferrer\")?>((?:\.\./)?[\w/-]+)\.md(#[\w-]*)?</a>")


def _setting_labels() -> dict[str, str]:
    return {path: spec.label for path, spec in knobs().items() if "_" in path or "." in path}


def for_reading(html: str, folder: str) -> str:
    """Return rendered docs HTML as a researcher reads it.

    - A setting's key in inline code (``trust_max_exact``) reads as its label, in quotes
      ("“Exact trust up to annotators”"), as the settings form names it; with a value
      (``systems_test = "wilcoxon"``) as the label and the value.
    - Inline code that names a file or folder of the repository (``core/stats/trust.py``,
      ``python -m bench.trust``) is left out, with the parentheses it stood alone in.
    - A link to a document the app does not serve (its address already dropped) reads as that
      document's title instead of its file name.
    """
    labels = _setting_labels()

    def code(m: re.Match[str]) -> str:
        opening, inner, closing = m[1] or "", m[2], m[3] or ""
        if inner in labels:
            return f"{opening}“{escape(labels[inner])}”{closing}"
        key, equals, value = inner.partition("=")
        if equals and key.strip() in labels:  # systems_test = "wilcoxon": the label and value
            shown = value.strip().strip('"').replace("&quot;", "").strip()
            return f"{opening}“{escape(labels[key.strip()])}”: {shown}{closing}"
        if _CODE_PATH.fullmatch(inner.strip()):
            return "" if opening and closing else (opening.rstrip() if opening else "") + closing
        return m[0]

    def unserved(m: re.Match[str]) -> str:
        # The link's text names the file; its address is gone. Beside the page, else at the
        # top of docs/ (how the statistics pages name ../results.md: "results.md").
        near = DOCS / posixpath.normpath(posixpath.join(folder, m[1] + ".md"))
        top = DOCS / posixpath.normpath(m[1].lstrip("./") + ".md")
        source = near if near.is_file() else top
        if not source.is_file():
            return m[1].rsplit("/", 1)[-1].replace("-", " ")
        with source.open(encoding="utf-8") as f:
            first = f.readline()
        return escape(first.lstrip("# ").strip().replace("*", "").replace("`", ""))

    html = _CODE.sub(code, html)
    return _UNSERVED_LINK.sub(unserved, html)


def reference_keys() -> list[str]:
    """Return the works docs/references.md lists, as they are cited ("Hovy et al. 2013")."""
    path = DOCS / "references.md"
    return list(_reference_keys(path.stat().st_mtime_ns))


@functools.lru_cache(maxsize=4)
def _reference_keys(mtime_ns: int) -> tuple[str, ...]:
    del mtime_ns  # the cache key: an edited file is read again
    text = (DOCS / "references.md").read_text(encoding="utf-8")
    return tuple(re.findall(r"^- \*\*([^*]+)\*\*", text, flags=re.MULTILINE))


@dataclass(frozen=True)
class SettingRow:
    key: str
    label: str
    value: str
    help: str


def settings_rows(name: str, used: Mapping[str, Any]) -> list[SettingRow]:
    """Return the settings method ``name`` read in a run, with their labels and values."""
    wanted = METHOD_SETTINGS.get(name, ())
    rows = []
    for path, spec in knobs().items():
        if not any(path == w or (w.endswith(".") and path.startswith(w)) for w in wanted):
            continue
        value: Any = used
        for part in path.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
        rows.append(SettingRow(path, spec.label, _shown(value, spec.choice_labels),
                               spec.help))
    return rows


def _shown(value: Any, labels: Mapping[str, str] | None) -> str:
    if value is None:
        return "automatic (empty)"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value)) or "none"
    if labels and value in labels:
        return labels[value]
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)
