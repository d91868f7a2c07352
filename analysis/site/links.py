"""Link checking on the rendered site: every local href/src resolves to a file of the site (and each
#fragment to an id), and no link is absolute, so the site works from file:// and under any sub-path."""
from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

from .spec import BuildError


class _Refs(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.refs: list[str] = []
        self.ids: set[str] = set()
        self.dup_ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if k == "id" and v:
                if v in self.ids:
                    self.dup_ids.add(v)
                self.ids.add(v)
            if v is not None and ((k == "href" and tag in ("a", "link", "area")) or
                                  (k == "src" and tag in ("script", "img", "iframe", "source"))):
                self.refs.append(v)


def check_links(root: Path, pages: list[str]) -> None:
    parsed = {}
    for name in pages:
        p = _Refs()
        p.feed((root / name).read_text(encoding="utf-8"))
        parsed[name] = p
        if p.dup_ids:
            raise BuildError(f"{name}: more than one element with id {', '.join(sorted(p.dup_ids))}; "
                             "give each chart and table its own id")
    for name in pages:
        for ref in parsed[name].refs:
            _check_one(root, name, ref, parsed)


def _check_one(root: Path, name: str, ref: str, parsed: dict) -> None:
    parts = urlsplit(ref)
    if parts.scheme in ("http", "https", "mailto"):
        return
    if parts.scheme or parts.netloc:
        raise BuildError(f"{name}: link {ref!r} is not a relative link to a file of the site")
    if parts.path.startswith("/"):
        raise BuildError(f"{name}: link {ref!r} is absolute; it would break under a sub-path or "
                         "file://; use a relative link")
    target = name if not parts.path else unquote(parts.path)
    path = (root / target).resolve()
    if root.resolve() not in path.parents or not path.is_file():
        raise BuildError(f"{name}: link {ref!r} points to {target}, which the site does not contain")
    if parts.fragment and target.endswith(".html"):
        ids = parsed[target].ids if target in parsed else set()
        if parts.fragment not in ids:
            raise BuildError(f"{name}: link {ref!r}: {target} has no element with id {parts.fragment!r}")
