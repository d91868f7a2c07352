"""Markup in every free-text field that reaches a page (run label, model name, device name, session id,
source file name, reject reason, price-file name, the models of the cost table, prompt snippets and repeated
instructions from logged messages): each comes back as its own
literal text on the pages that show it, which only happens where it was escaped, and no page carries an
injected element or event-handler attribute. The browser test loads the same pages in Chromium and checks
that nothing ran. The payload DB is tests/conftest.py's (a Store-written run plus a real `kvreport audit`)."""
from __future__ import annotations

import pytest

from conftest import CHROMIUM, FIELD_PAYLOADS, PAYLOADS, chromium_available
from htmldoc import Doc

MODEL = PAYLOADS["img"] + PAYLOADS["script"]  # write_payload_db's model name
AUDIT = "audit-audit-1"
# field -> {page: id of the table whose cells must show it, or None for anywhere in the page's text}
WHERE = {
    "label": {"compare.html": None, "index.html": None},
    "device": {"compare.html": None, "index.html": None, "memory.html": None},
    "model": {"memory.html": None, "claims.html": None, "compare.html": None},
    "session": {"audit.html": f"{AUDIT}-sessions"},
    "request-model": {"audit.html": f"{AUDIT}-cost-models"},
    "reject-reason": {"audit.html": f"{AUDIT}-rejects"},
    "source-file": {"audit.html": f"{AUDIT}-rejects"},
    "price-file": {"audit.html": None},
    "instruction": {"audit.html": f"{AUDIT}-repeats"},
    "prompt": {"audit.html": f"{AUDIT}-bloat-table"},
}
# The bloat table shows a prompt snippet cut short after the point where calls diverge: its element part.
PAYLOAD_OF = {**FIELD_PAYLOADS, "model": MODEL, "prompt": '<img src=x onerror="window.__xss=6">'}
ALLOWED_SRC = ("assets/",)


@pytest.fixture(scope="module")
def pages(payload_site) -> dict[str, Doc]:
    return {p.name: Doc(p.read_text(encoding="utf-8")) for p in sorted(payload_site.glob("*.html"))}


@pytest.mark.parametrize("field", list(WHERE))
def test_each_free_text_field_reads_back_as_text_where_it_is_shown(pages, field):
    payload = PAYLOAD_OF[field]
    for page, table in WHERE[field].items():
        doc = pages[page]
        where = doc.cells.get(table, []) if table else ["".join(doc.text)]
        assert any(payload in t for t in where), f"{field}: {payload!r} not shown as text in {page} {table or ''}"


@pytest.mark.parametrize("page", ["compare.html", "claims.html"])
def test_a_quote_breakout_in_an_attribute_reads_back_whole(pages, page):
    """Run names go into title attributes: the device name, markup and `" onmouseover="...` included, is the
    value of one attribute, not cut at its quote."""
    whole = FIELD_PAYLOADS["device"] + PAYLOADS["attr"]
    assert any(whole in (v or "") for tag, attrs in pages[page].elements if tag == "abbr"
               for k, v in attrs.items() if k == "title"), page


def test_no_page_carries_an_injected_element_or_handler(pages):
    for name, doc in pages.items():
        for tag, attrs in doc.elements:
            handlers = [k for k in attrs if k.startswith("on")]
            assert not handlers, f"{name}: <{tag}> has {handlers}"
            assert "autofocus" not in attrs, f"{name}: <{tag}> has autofocus"
            if tag in ("img", "svg", "iframe", "object", "embed", "video", "audio"):
                assert (attrs.get("src") or "").startswith(ALLOWED_SRC), f"{name}: injected <{tag} {attrs}>"
            if tag == "script":
                assert attrs.get("type") == "application/json" or (attrs.get("src") or "").startswith(ALLOWED_SRC), \
                    f"{name}: injected <script {attrs}>"


OK, WHY = chromium_available()


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.skipif(not OK, reason=WHY)
def test_no_payload_runs_in_chromium_and_each_field_is_shown_as_text(payload_site):
    """Every page of the payload site in Debian's Chromium: events a handler would hook are fired on every
    element, and no payload sets window.__xss; each field's payload is in the rendered text of its pages."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("dialog", lambda d: (errors.append(f"dialog: {d.message}"), d.dismiss()))
        for path in sorted(payload_site.glob("*.html")):
            page.goto(path.as_uri(), wait_until="load")
            page.evaluate("""() => document.querySelectorAll('body *').forEach(e => {
                for (const t of ['mouseover', 'mouseenter', 'focus', 'load', 'error'])
                  e.dispatchEvent(new Event(t, {bubbles: true}));
              })""")
            assert page.evaluate("() => window.__xss") is None, f"{path.name}: a payload ran"
            text = page.evaluate("() => document.body.innerText")
            for field, shown_on in WHERE.items():
                if path.name in shown_on:
                    assert PAYLOAD_OF[field] in text, f"{path.name}: {field} not shown as text"
        browser.close()
    assert errors == []
