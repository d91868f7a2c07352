"""Screenshots of every page of a built site, light and dark, desktop and phone, with Debian's chromium.

    python scripts/screenshots.py SITE_DIR OUT_DIR [--full]

Look at them before calling a page done (the issue asks for it). Needs /usr/bin/chromium and Playwright;
never runs `playwright install`.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync"]
VIEWPORTS = {"desktop": (1280, 900), "phone": (390, 844)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("site", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--full", action="store_true", help="whole page instead of the first screen")
    ap.add_argument("--pages", default="", help="comma-separated page names (default: every *.html)")
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    pages = sorted(p.name for p in args.site.glob("*.html"))
    if args.pages:
        pages = [p if p.endswith(".html") else p + ".html" for p in args.pages.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        for scheme in ("light", "dark"):
            for kind, (w, h) in VIEWPORTS.items():
                ctx = browser.new_context(viewport={"width": w, "height": h}, color_scheme=scheme,
                                          device_scale_factor=1)
                page = ctx.new_page()
                for name in pages:
                    page.goto((args.site / name).resolve().as_uri())
                    page.wait_for_load_state("load")
                    page.wait_for_timeout(150)
                    shot = args.out / f"{name[:-5]}-{kind}-{scheme}.png"
                    page.screenshot(path=str(shot), full_page=args.full)
                    print(shot)
                ctx.close()
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
