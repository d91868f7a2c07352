"""The built site in headless Chromium (Debian's /usr/bin/chromium driven by Playwright from PyPI; never
`playwright install`): over file:// and over HTTP under a sub-path, every page loads with zero console
errors, every chart renders, every local link resolves; the phone layout does not scroll sideways; dark
mode and the keyboard work (long tables sort from the keyboard); plotly loads only on pages that draw a chart;
no page scrolls sideways at 1280 or 390 px; and the XSS payloads written into the DB never execute."""
from __future__ import annotations

import contextlib
import functools
import http.server
import shutil
import threading
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest

from conftest import CHROMIUM, chromium_available

OK, WHY = chromium_available()
pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.skipif(not OK, reason=WHY)]

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync"]
SUB_PATH = "/some/sub/path/"
PHONE = {"width": 390, "height": 844}

# Every local href/src on the page, resolved by the browser against the page's own URL.
LINKS_JS = """() => Array.from(document.querySelectorAll('a[href], link[href], script[src], img[src]'))
  .map(e => e.href || e.src)"""
CHARTS_JS = """() => Array.from(document.querySelectorAll('.plot')).map(
  e => [e.id, !!e.querySelector('svg.main-svg'), e.querySelectorAll('.trace, .barlayer .point').length])"""
OVERFLOW_JS = "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
PLOTLY_JS = "() => !!document.querySelector('script[src$=\"plotly.min.js\"]')"
DESKTOP = {"width": 1280, "height": 900}


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def server(built_site, tmp_path_factory):
    """python's http.server on 127.0.0.1 serving a parent folder; the site is mounted at SUB_PATH."""
    root = tmp_path_factory.mktemp("www")
    shutil.copytree(built_site, root / SUB_PATH.strip("/"))
    handler = functools.partial(_QuietHandler, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}{SUB_PATH}"
    httpd.shutdown()
    httpd.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def _watch(page) -> list[str]:
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning")
            and "Plotly" not in m.text else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    # ERR_ABORTED is Chromium cancelling a request because the test navigated on (the favicon loads
    # lazily after `load`); a file that is really missing fails with a 404 or ERR_FILE_NOT_FOUND instead.
    page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url} {r.failure}")
            if "ERR_ABORTED" not in (r.failure or "") else None)
    page.on("response", lambda r: problems.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)
    page.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
    return problems


@contextlib.contextmanager
def _watched_page(browser, **context):
    """A page in a fresh browser context (`context`: new_context's options); a console error or warning, a
    failed request or a dialog on it (_watch) fails the test when the block ends. The context is closed."""
    ctx = browser.new_context(**context)
    try:
        page = ctx.new_page()
        problems = _watch(page)
        yield page
        assert problems == []
    finally:
        ctx.close()


def _check_page(page, url: str) -> list[str]:
    """Load; every chart rendered, plotly loaded exactly where a chart is drawn, and the page itself does not
    scroll sideways (wide tables scroll inside their wrapper). Returns the page's local links."""
    page.goto(url, wait_until="load")
    charts = page.evaluate(CHARTS_JS)
    for cid, has_svg, _ in charts:
        assert has_svg, f"{url}: chart {cid} did not render"
    assert page.evaluate(PLOTLY_JS) == bool(charts), f"{url}: plotly.min.js loaded without a chart, or a chart without it"
    overflow = page.evaluate(OVERFLOW_JS)
    width = page.viewport_size["width"]
    assert overflow <= 0, f"{url}: the page is {overflow}px wider than a {width}px window"
    return [link for link in page.evaluate(LINKS_JS) if link.startswith(("file:", "http://127.0.0.1"))]


def _pages(site: Path) -> list[str]:
    return sorted(p.name for p in site.glob("*.html"))


def test_every_page_over_file_url(browser, built_site):
    with _watched_page(browser, viewport=DESKTOP) as page:
        n_charts = 0
        for name in _pages(built_site):
            links = _check_page(page, (built_site / name).as_uri())
            n_charts += len(page.evaluate(CHARTS_JS))
            for link in links:
                parts = urlsplit(link)
                target = Path(parts.path)
                assert target.is_file(), f"{name}: {link} does not resolve"
                assert built_site.resolve() in target.resolve().parents, f"{name}: {link} leaves the site"
    assert n_charts >= 3


def test_every_page_over_http_under_a_sub_path_on_a_phone(browser, built_site, server):
    with _watched_page(browser, viewport=PHONE, is_mobile=True, has_touch=True) as page:
        checked: set[str] = set()
        for name in _pages(built_site):
            url = urljoin(server, name)
            links = _check_page(page, url)
            for link in links:
                link = link.split("#")[0]
                assert urlsplit(link).path.startswith(SUB_PATH), f"{name}: {link} escapes {SUB_PATH}"
                if link not in checked:
                    checked.add(link)
                    resp = page.request.get(link)
                    assert resp.status == 200, f"{name}: {link} -> {resp.status}"


@pytest.mark.parametrize("where, viewport", [("file", PHONE), ("http", DESKTOP)])
def test_no_page_scrolls_sideways(browser, built_site, server, where, viewport):
    """The other two combinations of scheme and width (the tests above cover file:// on a desktop and HTTP
    on a phone); _check_page asserts the overflow, the charts and where plotly loads."""
    with _watched_page(browser, viewport=viewport) as page:
        for name in _pages(built_site):
            _check_page(page, (built_site / name).as_uri() if where == "file" else urljoin(server, name))


def test_long_tables_sort_by_keyboard(browser, built_site):
    with _watched_page(browser, viewport=DESKTOP) as page:
        sortable = [n for n in _pages(built_site) if 'class="sortable' in (built_site / n).read_text(encoding="utf-8")]
        assert sortable, "no table long enough to sort in the fixture site: nothing was tested"
        page.goto((built_site / sortable[0]).as_uri(), wait_until="load")
        page.evaluate("() => document.querySelectorAll('details').forEach(d => { d.open = true; })")  # folded tables
        table = page.locator("table.sortable").first
        # The first numeric column (cells carry data-sort) is sorted by focusing its header button and pressing Enter.
        col = page.evaluate("""() => { const t = document.querySelector('table.sortable');
            return Array.from(t.tBodies[0].rows[0].cells).findIndex(c => c.hasAttribute('data-sort')); }""")
        assert col >= 0
        button = table.locator("thead th").nth(col).locator("button")
        button.focus()
        values = """(i) => Array.from(document.querySelector('table.sortable').tBodies[0].rows)
            .map(r => r.cells[i].getAttribute('data-sort')).filter(v => v !== null).map(Number)"""
        page.keyboard.press("Enter")
        up = page.evaluate(values, col)
        assert up == sorted(up) and len(up) > 15
        assert table.locator("thead th").nth(col).get_attribute("aria-sort") == "ascending"
        page.keyboard.press("Space")
        down = page.evaluate(values, col)
        assert down == sorted(up, reverse=True)
        assert table.locator("thead th").nth(col).get_attribute("aria-sort") == "descending"


def test_dark_theme_and_keyboard(browser, built_site):
    with _watched_page(browser, viewport={"width": 1280, "height": 900}, color_scheme="dark") as page:
        page.goto((built_site / "memory.html").as_uri(), wait_until="load")
        bg = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
        assert bg == "rgb(15, 23, 42)", bg
        # Plotly draws axis labels in the dark theme's light ink.
        tick = page.evaluate("() => getComputedStyle(document.querySelector('.plot .xtick text')).fill")
        assert tick == "rgb(226, 232, 240)", tick
        page.keyboard.press("Tab")
        assert page.evaluate("() => document.activeElement.className") == "skip"
        outline = page.evaluate("() => getComputedStyle(document.activeElement).outlineStyle")
        assert outline != "none"
        page.keyboard.press("Enter")
        assert page.evaluate("() => document.activeElement.id") == "main"
        page.keyboard.press("Tab")  # the next stop is inside the content, not back in the header
        inside = page.evaluate("() => document.getElementById('main').contains(document.activeElement)")
        assert inside


def test_xss_payloads_never_execute(browser, payload_site):
    with _watched_page(browser, viewport={"width": 1280, "height": 900}) as page:
        shown = 0
        for name in _pages(payload_site):
            page.goto((payload_site / name).as_uri(), wait_until="load")
            # Fire the events an attribute payload would hook: hover, focus and click on every element.
            page.evaluate("""() => document.querySelectorAll('body *').forEach(e => {
                for (const t of ['mouseover', 'mouseenter', 'focus', 'load', 'error'])
                  e.dispatchEvent(new Event(t, {bubbles: true}));
              })""")
            page.mouse.move(300, 300)
            page.mouse.move(600, 500)
            assert page.evaluate("() => window.__xss") is None, f"{name}: a payload ran (window.__xss set)"
            imgs = page.evaluate("() => Array.from(document.images).map(i => i.getAttribute('src'))")
            assert all(src.startswith("assets/") for src in imgs), f"{name}: injected image {imgs}"
            injected = page.evaluate("""() => Array.from(document.querySelectorAll('*')).filter(
                e => Array.from(e.attributes).some(a => a.name.startsWith('on'))).length""")
            assert injected == 0, f"{name}: an element carries an on* handler"
            text = page.evaluate("() => document.body.innerText")
            shown += text.count("<script>window.__xss=1</script>")
            # In charts, Plotly shows the payload as text (entity-escaped), it does not parse it as markup.
            legend = page.evaluate("() => Array.from(document.querySelectorAll('.legendtext')).map(e => e.textContent)")
            if name == "memory.html":
                assert any('<img src=x onerror="window.__xss=3">' in t for t in legend), legend
        assert shown > 0, "the payload text never appeared on a page: nothing was tested"


# --- answer-first tables and unit ticks (issue 27) -------------------------------------------------------
OPEN_DETAILS_JS = "() => document.querySelectorAll('details').forEach(d => { d.open = true; })"
# Tables (inside their scrolling wrapper) wider than the wrapper: [table name, pixels hidden]. A table is named
# by its id, else its class and the start of its caption, so the message says which table it is.
TABLE_NAME_JS = """(t) => t.id || [t.className, ((t.caption || {}).textContent || '(chart data)').trim().slice(0, 40)]
  .filter(Boolean).join(': ')"""
TABLE_OVERFLOW_JS = f"""() => {{ const name = {TABLE_NAME_JS};
  return Array.from(document.querySelectorAll('.table-wrap')).filter(w => w.offsetParent !== null)
  .map(w => [w.querySelector('table') ? name(w.querySelector('table')) : '(no table)', w.scrollWidth - w.clientWidth])
  .filter(x => x[1] > 1); }}"""
# Each table scrolled to its right end: the cell in its first column must still be fully in view (sticky), in
# every body row. A cell spanning rows (the claims ledger's claim) stands for the rows it spans.
FIRST_COLUMN_JS = f"""() => {{ const bad = [], name = {TABLE_NAME_JS};
  document.querySelectorAll('.table-wrap').forEach(w => {{
    if (w.offsetParent === null) {{ return; }}
    const t = w.querySelector('table');
    if (!t || !t.rows.length) {{ return; }}
    w.scrollLeft = w.scrollWidth;
    const wr = w.getBoundingClientRect();
    const rows = t.tBodies.length && t.tBodies[0].rows.length ? t.tBodies[0].rows : t.rows;
    let spanned = 0;
    for (const row of rows) {{
      if (spanned > 0) {{ spanned -= 1; continue; }}
      const cell = row.cells[0];
      if (!cell) {{ continue; }}
      spanned = cell.rowSpan - 1;
      const r = cell.getBoundingClientRect();
      if (r.width === 0 || r.left < Math.max(wr.left, 0) - 1 || r.right > Math.min(wr.right, innerWidth) + 1) {{
        bad.push([name(t), row.rowIndex, Math.round(r.left), Math.round(r.right), Math.round(wr.right)]);
        return;
      }}
    }}
  }});
  return bad; }}"""
TICKS_JS = """() => Array.from(document.querySelectorAll('.plot .xtick text, .plot .ytick text'))
  .map(e => e.textContent)"""


def significant_digits(label: str) -> int:
    """Significant digits of a tick label: "0.147456" 6, "2,000" 1, "500 KiB" 1, "1.25" 3."""
    digits = "".join(ch for ch in label if ch.isdigit())
    digits = digits.lstrip("0")
    return len(digits.rstrip("0")) if "." not in label else len(digits)


def test_significant_digits_counts_what_a_reader_reads():
    assert significant_digits("0.147456") == 6
    assert significant_digits("2.06438") == 6
    assert significant_digits("2,000") == 1
    assert significant_digits("500 KiB") == 1
    assert significant_digits("16,384") == 5


# The published site (site/, built from site/data/kvreport.duckdb and committed) carries tables the fixture
# site lacks: a replay's trace path in the claims ledger, measured rows that fill every crossover column. Its
# layout is checked as well as the fixture's.
COMMITTED_SITE = Path(__file__).resolve().parent.parent / "site"


@pytest.fixture(params=["fixture", "committed"])
def any_site(request) -> Path:
    if request.param == "fixture":
        return request.getfixturevalue("built_site")
    assert (COMMITTED_SITE / "index.html").is_file(), f"{COMMITTED_SITE} holds no built site"
    return COMMITTED_SITE


def test_no_table_scrolls_sideways_at_1280(browser, any_site):
    with _watched_page(browser, viewport=DESKTOP) as page:
        wide = {}
        n_tables = 0
        for name in _opened(page, any_site):
            n_tables += page.evaluate("() => document.querySelectorAll('.table-wrap table').length")
            if over := page.evaluate(TABLE_OVERFLOW_JS):
                wide[name] = over
        assert wide == {}, f"tables wider than a 1280 px window (table, px hidden): {wide}"
        assert n_tables > 20, f"too few tables in {any_site}: nothing was tested"


def test_first_column_stays_in_view_at_390(browser, any_site):
    with _watched_page(browser, viewport=PHONE, is_mobile=True, has_touch=True) as page:
        hidden = {}
        scrolled = 0
        for name in _opened(page, any_site):
            scrolled += page.evaluate("""() => Array.from(document.querySelectorAll('.table-wrap'))
                .filter(w => w.offsetParent !== null && w.scrollWidth > w.clientWidth + 1).length""")
            if bad := page.evaluate(FIRST_COLUMN_JS):
                hidden[name] = bad
        assert hidden == {}, f"first columns out of view once the table scrolls (table, row, left, right, wrapper right): {hidden}"
        assert scrolled > 0, f"no table scrolls at 390 px in {any_site}: the sticky column was never tested"


def _opened(page, site: Path):
    """The name of each page of `site` once `page` has loaded it and opened its folded details (their tables
    count too)."""
    for name in _pages(site):
        page.goto((site / name).as_uri(), wait_until="load")
        page.evaluate(OPEN_DETAILS_JS)
        yield name


@pytest.mark.parametrize("name", ["compaction.html", "decode.html", "memory.html"])
def test_axes_tick_in_units(browser, built_site, name):
    """Log and byte axes tick at 1-2-5 in the unit the tables print: no label with more than 4 significant
    digits (the raw-float ticks "0.147456, 0.589824, 2.06438" fail), and byte axes say KiB/MiB, not "3M"."""
    ctx = browser.new_context(viewport=DESKTOP)
    page = ctx.new_page()
    page.goto((built_site / name).as_uri(), wait_until="load")
    ticks = page.evaluate(TICKS_JS)
    assert ticks, f"{name}: no axis ticks rendered"
    long = [t for t in ticks if significant_digits(t) > 4]
    assert long == [], f"{name}: tick labels with more than 4 significant digits: {long}"
    assert not [t for t in ticks if t.rstrip().endswith(("M", "k", "G"))], f"{name}: SI-suffixed byte ticks {ticks}"
    if name == "compaction.html":
        assert any(t.endswith(("KiB", "MiB", "GiB")) for t in ticks), f"{name}: bytes axis not in binary units: {ticks}"
    ctx.close()
