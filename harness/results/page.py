"""The one HTML page shell of every page that shows results: certify report and matrix, bench
report, board.

It lives with the results because that is the floor every page maker may import: the certify
report is written by `harness.conformance`, the bench report and the board by `harness.report`,
and both read results files. A page is self-contained: inline CSS, no script, nothing fetched.
"""

from __future__ import annotations

from collections.abc import Iterable
from html import escape


def html_page(*, title: str, css: str, body: Iterable[str]) -> str:
    """A whole HTML document: `title` is text (escaped here); `css` and `body` are markup."""
    return "\n".join(
        [
            "<!doctype html>",
            '<html lang="en"><head><meta charset="utf-8">',
            f"<title>{escape(title)}</title>",
            f"<style>{css}</style></head><body>",
            *body,
            "</body></html>\n",
        ]
    )
