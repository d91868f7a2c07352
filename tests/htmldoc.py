"""The one HTML helper of the tests: parse a built page into what assertions need (elements with attributes,
script blocks, tables with their header labels, body cell texts and caption). New tests use this instead
of another HTMLParser subclass."""
from __future__ import annotations

from html.parser import HTMLParser


class Doc(HTMLParser):
    """Just enough of the DOM for assertions: elements with attributes, text per element, script blocks."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict]] = []
        self.scripts: list[tuple[dict, str]] = []
        self.tables: list[dict] = []
        self._stack: list[dict] = []
        self._script: dict | None = None
        self._text: list[str] = []
        self._cell: list[str] | None = None
        self._caption: list[str] | None = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.elements.append((tag, a))
        if tag == "script":
            self._script = a
            self._text = []
        if tag == "table":
            self._stack.append({"attrs": a, "body_rows": 0, "in_body": False, "head": [], "rows": [],
                                "caption": ""})
        if self._stack:
            t = self._stack[-1]
            if tag == "tbody":
                t["in_body"] = True
            if tag == "tr" and t["in_body"]:
                t["body_rows"] += 1
                t["rows"].append([])
            if tag in ("th", "td"):
                self._cell = []
            if tag == "caption":
                self._caption = []

    def handle_endtag(self, tag):
        if tag == "script" and self._script is not None:
            self.scripts.append((self._script, "".join(self._text)))
            self._script = None
        if tag in ("th", "td") and self._stack and self._cell is not None:
            t, text = self._stack[-1], " ".join("".join(self._cell).split())
            (t["rows"][-1] if t["in_body"] and t["rows"] else t["head"]).append(text)
            self._cell = None
        if tag == "caption" and self._stack and self._caption is not None:
            self._stack[-1]["caption"] = " ".join("".join(self._caption).split())
            self._caption = None
        if tag == "table" and self._stack:
            self.tables.append(self._stack.pop())

    def handle_data(self, data):
        if self._script is not None:
            self._text.append(data)
        if self._cell is not None:
            self._cell.append(data)
        if self._caption is not None:
            self._caption.append(data)

    def find(self, tag=None, **attrs) -> list[dict]:
        return [a for t, a in self.elements if (tag is None or t == tag)
                and all(a.get(k.rstrip("_").replace("_", "-")) == v for k, v in attrs.items())]



    def table(self, table_id: str) -> dict:
        """A table by id: attrs, head (header labels), rows (cell texts per body row), caption."""
        found = [t for t in self.tables if t["attrs"].get("id") == table_id]
        assert found, f"no table with id {table_id!r}"
        return found[0]
