"""The one HTML page shell: a complete, self-contained document around the page's own markup."""

from __future__ import annotations

from html.parser import HTMLParser

from harness.results.page import html_page


class _Outline(HTMLParser):
    """The tags in document order, with the text of <title> and <style>."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: dict[str, str] = {}
        self.decl: str | None = None
        self._inside: str | None = None

    def handle_decl(self, decl: str) -> None:
        self.decl = decl

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag + "".join(f" {k}={v}" for k, v in attrs))
        self._inside = tag if tag in ("title", "style") else None

    def handle_endtag(self, tag: str) -> None:
        self._inside = None

    def handle_data(self, data: str) -> None:
        if self._inside is not None:
            self.text[self._inside] = self.text.get(self._inside, "") + data


def test_the_shell_holds_head_style_title_and_the_body_in_order() -> None:
    page = html_page(title="a <b> & c", css="h1{color:red}", body=["<h1>one</h1>", "<p>two</p>"])
    outline = _Outline()
    outline.feed(page)
    assert outline.decl == "doctype html"
    assert outline.tags == [
        "html lang=en",
        "head",
        "meta charset=utf-8",
        "title",
        "style",
        "body",
        "h1",
        "p",
    ]
    assert outline.text == {"title": "a <b> & c", "style": "h1{color:red}"}  # the title escaped
    assert "<title>a &lt;b&gt; &amp; c</title>" in page
    assert page.endswith("</body></html>\n")
