"""What a reader sees on every page of a built site (each .html under it): the body text block by block (table
cells, bullets, captions, the title), the tooltips and labels in attributes, and the words a chart draws (titles,
axis titles, legend names, hover text, annotations). None of it may show Python's or JavaScript's missing
values (None, nan, inf, undefined), a share below 0% or above what it is a share of, or a count of one with a
plural noun ("1 runs"). Checked over the published site (site/) and over the site built from the fixture DB."""
from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

PUBLISHED = Path(__file__).resolve().parent.parent / "site"

# Tags that start a new line on the page: text on either side of one never reads as one phrase.
BLOCK = ("address|article|aside|blockquote|br|caption|dd|details|div|dl|dt|figcaption|figure|footer|h[1-6]|header|"
         "hr|li|main|nav|ol|p|pre|section|summary|table|tbody|td|tfoot|th|thead|title|tr|ul")
# Attributes a reader meets as text: tooltips, screen-reader labels, image text.
SHOWN_ATTRS = ("title", "aria-label", "alt", "placeholder")
# Keys of a Plotly figure whose strings are drawn or shown on hover.
CHART_TEXT_KEYS = {"text", "name", "ticktext", "hovertemplate"}

MISSING = re.compile(r"\b(?:None|nan|NaN|inf|Infinity|undefined)\b")
# Prose that names NaN on purpose: the compaction check fills its destination with NaN before the gather.
MISSING_ON_PURPOSE = re.compile(r"filled with NaN\b")

# Counted nouns on this site: after a bare "1" they must be singular. A "1" inside a number (2,001, 0.1) or an
# expression (window − 1 tokens) is not a count of one.
COUNTED = ("runs|requests|rows|tokens|sessions|calls|columns|claims|verdicts|models|devices|files|logs|seconds|"
           "layers|batches|points|experiments|pages|GPUs|replays|audits|iterations|repeats|errors|rejects|prompts|"
           "turns|charts|tables|configurations|architectures|measurements|workloads|values|heads|messages|users|"
           "steps|copies|kernels|roofs|bytes|entries|lines|times|shapes|methods|modes|sizes|differences")
ONE_PLURAL = re.compile(rf"(?<![\d.,−\-+×/])(?<![\d.,−\-+×/] )\b1 (?:{COUNTED})\b")
BROKEN_GRAMMAR = re.compile(r"\bbecause needs\b")

NUM = r"[-−]?\d[\d,]*(?:\.\d+)?"
# A negative share: a percentage below zero with a word that already says which way it goes.
NEGATIVE_SHARE = [re.compile(r"[-−]\s?\d[\d,.]*\s?%\s*(?:of|saved|lost|less|fewer|cheaper|hit|freed)\b"),
                  re.compile(r"\b(?:lost|saved|freed|cut by|hit)\s+[-−]\s?\d[\d,.]*\s?%")]
# Shares of a whole that bounds them: of tokens, calls, sessions, requests, byte-seconds, a bill, a ceiling.
SHARE_OF_WHOLE = re.compile(rf"({NUM})\s?%\s+of\s+(?:the |its |their |all |these |those |every )?"
                            r"(?:[\w-]+ ){0,2}?(?:tokens|calls|sessions|requests|byte-seconds|bill|ceiling|prompts)\b")
# Named shares (a hit rate, PCER, SPOR, a leakage index): 0-100% by definition.
NAMED_SHARE = re.compile(rf"\b(?:PCER|SPOR|leakage index|hit rate|hit ratio)\s+(?:of\s+)?({NUM})\s?%")
# A share of a measured roof or peak (one number or a range "64%–106% of ..."). A same-size roof can be beaten
# by a few percent of timing noise; beyond ROOF_SLACK it is a measurement error and must be called one.
ROOF_SHARE = re.compile(rf"({NUM})\s?%(?:\s*[–-]\s*({NUM})\s?%)?\s+of\s+(?:the |its |their )?"
                        r"(?:same-size |device |measured |theoretical )?(?:copy |read |DRAM )?(?:roofs?|peak)\b")
ROOF_SLACK = 105.0
CALLED_NOISY = re.compile(r"flagged|measurement error|too noisy|unstable")
# Table columns that hold shares, by header: never below 0; at most 100% (a roof column: ROOF_SLACK, unless
# the row is flagged noisy).
SHARE_HEADER = re.compile(r"% of|\bPCER\b|\bSPOR\b|hit rate|\bshare\b|saved|freed|lost|achievable|stable prefix")
ROOF_HEADER = re.compile(r"% of .*roof|% of roof|peak")
PCT_CELL = re.compile(rf"~?\s*({NUM})\s?%")


def _number(s: str) -> float:
    return float(s.replace(",", "").replace("−", "-"))


def _chart_strings(figure) -> list[str]:
    out: list[str] = []

    def walk(node, key=None):
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, k)
        elif isinstance(node, list):
            for v in node:
                walk(v, key)
        elif isinstance(node, str) and key in CHART_TEXT_KEYS:
            out.append(node)
    walk(figure)
    return out


def visible_segments(page: str) -> list[str]:
    """The pieces of text a reader sees on a page, each a line of its own: body text split at block tags,
    the shown attributes, and the strings of each chart's figure JSON."""
    segments: list[str] = []
    for block in re.findall(r'(?is)<script type="application/json"[^>]*>(.*?)</script>', page):
        segments += _chart_strings(json.loads(block))
    body = " ".join(re.sub(r"(?is)<(script|style)\b.*?</\1>", " ", page).split())  # source line breaks are spaces
    for attr in SHOWN_ATTRS:
        segments += [html.unescape(v) for v in re.findall(rf'\s{attr}="([^"]*)"', body)]
    body = re.sub(rf"(?i)</?(?:{BLOCK})\b[^>]*>", "\n", body)
    body = html.unescape(re.sub(r"<[^>]+>", " ", body))
    segments += body.split("\n")
    return [s for s in (" ".join(seg.split()) for seg in segments) if s]


def _table_problems(page: str) -> list[str]:
    """Share columns (by header) whose cells fall below 0% or above 100% (a roof column: above ROOF_SLACK in a
    row not flagged noisy)."""
    from htmldoc import Doc

    doc, bad = Doc(page), []
    for table in doc.all("table"):
        heads = [" ".join(th.text.split()) for th in doc.all("th", within=table)
                 if any(n.tag == "thead" for n in doc.all("thead", within=table)
                        if n.index < th.index < n.end)]
        for tr in doc.all("tr", within=table):
            cells = [c for c in doc.all(within=tr) if c.tag in ("td", "th")]
            if len(cells) != len(heads):
                continue
            for head, cell in zip(heads, cells):
                m = PCT_CELL.fullmatch(" ".join(cell.text.split()))
                if not (m and SHARE_HEADER.search(head)):
                    continue
                v = _number(m.group(1))
                cap = ROOF_SLACK if ROOF_HEADER.search(head) else 100.0
                if v < 0 or (v > cap and not (ROOF_HEADER.search(head) and "flagged" in tr.classes)):
                    bad.append(f"table column {head!r}: {cell.text.strip()}")
    return bad


def text_problems(page: str) -> list[str]:
    """Everything on one page a reader should never see (see the module docstring)."""
    bad: list[str] = []
    for seg in visible_segments(page):
        quoted = seg[:160]
        if MISSING.search(MISSING_ON_PURPOSE.sub("", seg)):
            bad.append(f"missing value: {quoted}")
        if ONE_PLURAL.search(seg) or BROKEN_GRAMMAR.search(seg):
            bad.append(f"grammar: {quoted}")
        if any(p.search(seg) for p in NEGATIVE_SHARE):
            bad.append(f"negative share: {quoted}")
        for m in SHARE_OF_WHOLE.finditer(seg):
            if not 0 <= _number(m.group(1)) <= 100:
                bad.append(f"share of a whole outside 0-100%: {quoted}")
        for m in NAMED_SHARE.finditer(seg):
            if not 0 <= _number(m.group(1)) <= 100:
                bad.append(f"share outside 0-100%: {quoted}")
        for sentence in re.split(r"(?<=[.;])\s", seg):
            for m in ROOF_SHARE.finditer(sentence):
                shares = [_number(g) for g in m.groups() if g is not None]
                if any(s < 0 or s > ROOF_SLACK for s in shares) and not CALLED_NOISY.search(sentence):
                    bad.append(f"share of a roof below 0 or above {ROOF_SLACK:g}%: {sentence[:160]}")
    return bad + _table_problems(page)


def site_problems(folder: Path) -> dict[str, list[str]]:
    found = {}
    for page in sorted(folder.rglob("*.html")):
        bad = text_problems(page.read_text(encoding="utf-8"))
        if bad:
            found[str(page.relative_to(folder))] = bad
    return found


def test_published_site_reads_clean():
    assert (PUBLISHED / "index.html").is_file(), f"{PUBLISHED} holds no built site"
    assert site_problems(PUBLISHED) == {}


def test_fixture_site_reads_clean(built_site):
    assert site_problems(built_site) == {}


@pytest.mark.parametrize("page, problem", [
    ("<ul><li>None — run 1, gpt2</li></ul>", "missing value"),
    ("<p>peak nan GB/s</p>", "missing value"),
    ("<td>NaN</td>", "missing value"),
    ("<p>ratio inf</p>", "missing value"),
    ('<abbr title="run None">run 1</abbr>', "missing value"),
    ('<script type="application/json" id="c-data">{"data": [{"name": "None (run 2)"}], "layout": {}}</script>',
     "missing value"),
    ("<p>the 1 runs differ</p>", "grammar"),
    ("<li>admitted 1 requests</li>", "grammar"),
    ("<p>run 1 skipped because needs CUDA</p>", "grammar"),
    ("<p>compaction lost -1101% of its bandwidth</p>", "negative share"),
    ("<p>as billed $0.219 (-3.5% saved)</p>", "negative share"),
    ("<p>112.5% of prompt tokens hit the cache</p>", "share of a whole"),
    ("<p>PCER 140.0%</p>", "share outside"),
    ("<p>read at 6,510.9% of its roof.</p>", "share of a roof"),
    ("<p>range 20.9–34.5 GB/s (64%–116% of the device roof).</p>", "share of a roof"),
    (("<table><thead><tr><th>run</th><th>time saved</th></tr></thead><tbody><tr><td>1</td><td>-0.4%</td></tr>"
      "</tbody></table>"), "table column"),
    (("<table><thead><tr><th>run</th><th>% of same-size copy roof</th></tr></thead><tbody><tr><td>1</td>"
      "<td>650.0%</td></tr></tbody></table>"), "table column"),
])
def test_the_check_catches_what_it_is_for(page, problem):
    found = text_problems(page)
    assert found and all(problem in f for f in found), found


@pytest.mark.parametrize("page", [
    "<p>6,510.9% of its roof: flagged as a measurement error.</p>",
    "<p>window − 1 tokens; 2,001 requests; 0.1 tokens; batch 1 launches small kernels</p>",
    "<p>1 run, 1 request, 1 of 3 runs</p>",
    "<p>change -32.1% improvement; gaps (-2.8% / +4.3%)</p>",
    "<p>the destination is filled with NaN, gathered once</p>",
    "<p>'both' carries 100.2% of compaction alone's bytes</p>",
    ("<table><thead><tr><th>run</th><th>% of same-size copy roof</th></tr></thead><tbody><tr class=\"flagged\">"
     "<td>1</td><td>650.0%</td></tr></tbody></table>"),
    ("<table><thead><tr><th>run</th><th>change</th></tr></thead><tbody><tr><td>1</td><td>-12.0%</td></tr>"
     "</tbody></table>"),
])
def test_the_check_passes_what_reads_right(page):
    assert text_problems(page) == []


# The two source documents: the overview says once what they are; every other mention uses one plain name.
SOURCE_NAMES = ("token-audit article", "profiler write-up")
ARTICLE_TITLE = "Profiling Token Allocation"
# Names a reader cannot place: "the seed", "the article" alone, "the earlier profiler", "the profiler seed".
UNPLACED = re.compile(r"(?i)\bseeds?\b(?<!random seed)(?<!fixed seed)(?<!same seed)|(?<!token-audit )\barticle\b|"
                      r"\bearlier profiler\b|\bprofiler(?! write-up)\b(?!,? run with)")


def naming_problems(folder: Path) -> list[str]:
    bad = []
    index = (folder / "index.html").read_text(encoding="utf-8")
    intro = re.search(r'(?s)<p id="sources">(.*?)</p>', index)
    if not intro:
        return ["index.html: no paragraph saying what the source documents are (#sources)"]
    if not all(name in intro.group(1).lower() for name in SOURCE_NAMES) or 'href="claims.html"' not in intro.group(1):
        bad.append("index.html #sources: must name both documents and link the claims page")
    for page in sorted(folder.rglob("*.html")):
        segments = visible_segments(page.read_text(encoding="utf-8"))
        titled = sum(ARTICLE_TITLE in s for s in segments)
        if titled and page.name != "index.html":
            bad.append(f"{page.name}: the article's title again (the overview says it once)")
        for seg in segments:
            # The overview's own description of the write-up ("a GPU KV-cache profiler, run with ...") and the
            # article's code ("a small Python profiler") are what the names stand for.
            plain = re.sub(r"(?:GPU KV-cache|small Python) profiler", "", seg)
            for m in UNPLACED.finditer(plain):
                bad.append(f"{page.name}: {m.group(0)!r} in: {seg[:140]}")
    return bad


def test_published_site_names_its_sources_plainly():
    assert naming_problems(PUBLISHED) == []


def test_fixture_site_names_its_sources_plainly(built_site):
    assert naming_problems(built_site) == []


def test_the_naming_check_catches_what_it_is_for(tmp_path):
    (tmp_path / "index.html").write_text(
        '<p id="sources">The token-audit article (Profiling Token Allocation) and the profiler write-up: '
        '<a href="claims.html">Claims</a>.</p>')
    (tmp_path / "a.html").write_text("<p>as the seed said; the article's 55%; claims of the earlier profiler; "
                                     "random seed 3; the token-audit article's 55%</p>")
    (tmp_path / "b.html").write_text("<p>Profiling Token Allocation</p>")
    found = naming_problems(tmp_path)
    assert len(found) == 4 and sum(f.startswith("a.html") for f in found) == 3, found
    (tmp_path / "index.html").write_text('<p id="sources">The token-audit article only.</p>')
    assert "must name both documents" in naming_problems(tmp_path)[0]
