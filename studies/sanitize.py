"""Researcher-supplied HTML and Markdown made safe to show: nh3 allow-lists, never regexes."""

from __future__ import annotations

import markdown as md
import nh3

# Formatting only: no attributes but links' href (http/https/mailto), no scripts, no styles,
# no images (an <img> can leak that an annotator opened an item).
ITEM_TAGS = {"b", "i", "em", "strong", "u", "mark", "sub", "sup", "br", "p", "span", "code",
             "small", "s", "q", "blockquote", "ul", "ol", "li"}
DOC_TAGS = ITEM_TAGS | {"h1", "h2", "h3", "h4", "h5", "h6", "a", "hr", "pre", "table", "thead",
                        "tbody", "tr", "th", "td", "dl", "dt", "dd"}


def clean_item_html(text: str) -> str:
    """Return item text with only inline formatting kept; everything else is escaped away."""
    return nh3.clean(text, tags=ITEM_TAGS, attributes={}, url_schemes=set())


def render_markdown(text: str) -> str:
    """Render Markdown (instructions, consent, rubric) and sanitise the result."""
    html = md.markdown(text, extensions=["extra", "sane_lists"], output_format="html")
    return nh3.clean(
        html,
        tags=DOC_TAGS,
        attributes={"a": {"href", "title"}, "th": {"align"}, "td": {"align"}},
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
    )
