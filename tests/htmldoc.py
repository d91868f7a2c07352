"""The one HTML helper of the tests: parse a built page into what assertions need (elements with attributes,
script blocks, tables with their header labels, body cell texts and caption, the page's visible text, and
a small element tree for "the verdict in this row"). Tests use this instead of an HTMLParser subclass."""
from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

# Elements that never have an end tag: they close where they open.
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


@dataclass
class Node:
    """One element: its attributes, the raw text inside it (scripts included), and the nodes inside it
    (`Doc.inside`). `classes` splits the class attribute."""
    tag: str
    attrs: dict
    index: int
    end: int = -1  # index past its last descendant in Doc.nodes
    chunks: list = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(self.chunks)

    @property
    def classes(self) -> list[str]:
        return (self.attrs.get("class") or "").split()


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
        self.nodes: list[Node] = []
        self._open: list[Node] = []
        self.text: list[str] = []  # data outside <script> and <style>: what a reader sees, unjoined
        self.cells: dict[str | None, list[str]] = {}  # raw cell texts (head and body) by table id
        self._raw_cell: list[str] | None = None
        self._hidden = 0
        self.feed(text)
        self.close()
        for node in self._open:  # unclosed at the end of the page
            node.end = len(self.nodes)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.elements.append((tag, a))
        node = Node(tag, a, len(self.nodes))
        self.nodes.append(node)
        if tag in VOID:
            node.end = len(self.nodes)
        else:
            self._open.append(node)
        if tag in ("script", "style"):
            self._hidden += 1
        if tag in ("th", "td"):
            self._raw_cell = []
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
        if tag in VOID:
            return
        for depth in range(len(self._open) - 1, -1, -1):  # close it and anything left open inside it
            if self._open[depth].tag == tag:
                for node in self._open[depth:]:
                    node.end = len(self.nodes)
                del self._open[depth:]
                break
        if tag in ("script", "style") and self._hidden:
            self._hidden -= 1
        if tag in ("th", "td") and self._raw_cell is not None:
            table_id = self._stack[-1]["attrs"].get("id") if self._stack else None
            self.cells.setdefault(table_id, []).append("".join(self._raw_cell))
            self._raw_cell = None
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
        for node in self._open:
            node.chunks.append(data)
        if not self._hidden:
            self.text.append(data)
            if self._raw_cell is not None:
                self._raw_cell.append(data)
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

    def all(self, tag: str | None = None, cls: str | None = None, within: Node | None = None) -> list[Node]:
        """Elements by tag and/or class, in document order; `within`: only inside that element."""
        nodes = self.nodes[within.index + 1: within.end] if within is not None else self.nodes
        return [n for n in nodes if (tag is None or n.tag == tag) and (cls is None or cls in n.classes)]

    def ids(self) -> set[str]:
        """Every id on the page."""
        return {a["id"] for _tag, a in self.elements if a.get("id")}

    def page_text(self) -> str:
        """The visible text, whitespace collapsed: what a reader sees."""
        return " ".join("".join(self.text).split())


def page_text(text: str) -> str:
    """A built page's visible text (scripts and tags dropped), whitespace collapsed: what a reader sees."""
    text = re.sub(r"(?is)<(script|style)\b.*?</\1>", " ", text)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", text)).split())


def element_ids(doc: Doc) -> set[str]:
    """Every id on a page parsed by Doc."""
    return doc.ids()
