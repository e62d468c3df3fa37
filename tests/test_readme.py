"""The README's own links hold: every #anchor names a heading of it."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to -."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_every_anchor_link_names_a_heading():
    text = README.read_text("utf-8")
    anchors = {slug(m) for m in re.findall(r"^#{1,6} (.+)$", text, re.MULTILINE)}
    links = set(re.findall(r"\]\(#([^)]+)\)", text))
    assert links, "no anchor links found"
    assert sorted(links - anchors) == []
