"""`strataflow report` seen by a real browser: headless Chromium renders the page.

The page must show a person what it promises with nothing but the file: no network, no
script. This script makes a run's event log (a small job that thrashes under Spark's
policy, so every section has something to draw) unless given one, renders the report,
then has Chromium (Debian's ``chromium`` package: ``apt-get install -y chromium``)

- take a screenshot of the whole page and checks, over its pixels (numpy), that it is not
  blank: a share of non-white pixels, many distinct colours, and the charts' own colours
  (which only decoded images can put on the page: the text is black, grey and link blue):
  the jobs' blue and the misses' red, which every run with a job draws (the memory hits'
  green is counted too, not required: a run with no memory hit, a word count whose blocks
  do not fit, draws none);
- dump the DOM after loading, and checks that every section and every inlined image is
  there.

    python benchmarks/report_browser.py [--log LOG] [--backend threads|processes]
                                        [--out DIR] [--chromium PATH] [--window 1280x6000]

Prints the checks as JSON and exits 1 if one fails (2 if no Chromium is found).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from strataflow.bench.report import emit_json  # noqa: E402

SECTIONS = ("summary", "timeline", "occupancy", "moves", "hits", "simulator")
#: colours the charts use and the page's text does not (misses and drops red, memory hits green, bars blue)
CHART_COLOURS = {"red #c44e52": (0xC4, 0x4E, 0x52), "green #55a868": (0x55, 0xA8, 0x68),
                 "blue #4c72b0": (0x4C, 0x72, 0xB0)}
#: the ones every run with a job draws: the jobs' bars on the timeline, the misses (a first read computes)
REQUIRED_COLOURS = ("red #c44e52", "blue #4c72b0")
BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def find_chromium() -> str | None:
    return next((p for p in map(shutil.which, BROWSERS) if p), None)


def make_log(path: str, backend: str = "threads") -> str:
    """A small job's event log: two persisted datasets read together in a budget that
    holds neither both, under ``spark`` (drops and re-caches every pass)."""
    from strataflow import Context, StorageLevel

    with Context(memory="6MB", backend=backend, parallelism=2, event_log=path, policy="spark",
                 app_name="report-browser") as ctx:
        rows = ctx.from_numpy(np.arange(8 * 64 * 1024, dtype=np.float64).reshape(-1, 8), num_partitions=8)
        a = rows.map_partitions(lambda b: b * 1.0).persist(StorageLevel.MEMORY_AND_DISK)
        b = a.map_partitions(lambda x: x[:, :4] + 1).persist(StorageLevel.MEMORY_AND_DISK)
        for _ in range(3):
            a.zip_partitions(b, f=lambda x, y: [float(x.sum() + y.sum())]).collect()
    return path


def _chromium(chromium: str, profile: str, *args: str) -> subprocess.CompletedProcess:
    cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
           f"--user-data-dir={profile}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def screenshot_checks(png: str) -> dict:
    """Pixel checks of a screenshot: not blank, and the charts drawn."""
    from PIL import Image

    px = np.asarray(Image.open(png).convert("RGB"), dtype=np.int16)
    flat = px.reshape(-1, 3)
    non_white = float(np.mean(flat.min(axis=1) < 235))
    colours = int(len(np.unique(flat[:: max(1, len(flat) // 400_000)], axis=0)))
    found = {name: int(np.sum(np.abs(flat - np.array(rgb)).max(axis=1) <= 12)) for name, rgb in CHART_COLOURS.items()}
    return {"size": list(px.shape[1::-1]), "non_white_fraction": round(non_white, 4), "distinct_colours": colours,
            "chart_colour_pixels": found,
            "not_blank": non_white > 0.03 and colours > 100 and all(found[c] > 500 for c in REQUIRED_COLOURS)}


def dom_checks(dom: str) -> dict:
    missing = [s for s in SECTIONS if f'id="{s}"' not in dom]
    images = len(re.findall(r'<img [^>]*src="data:image/png;base64,', dom))
    external = re.findall(r'(?:src|href)="(?!data:|#)[^"]*"', dom)
    return {"sections_missing": missing, "inline_images": images, "external_refs": external,
            "ok": not missing and images >= len(SECTIONS) - 1 and not external}


def check_in_browser(html: str, out_dir: str, chromium: str, window: str = "1280,6000") -> dict:
    """Screenshot and DOM of ``html`` in headless Chromium, with the checks' results."""
    shot = os.path.join(out_dir, "screenshot.png")
    url = "file://" + os.path.abspath(html)
    with tempfile.TemporaryDirectory(prefix="sf-chromium-") as profile:
        r = _chromium(chromium, profile, f"--screenshot={shot}", f"--window-size={window}", url)
        if not os.path.exists(shot):
            raise RuntimeError(f"chromium wrote no screenshot (exit {r.returncode}): {r.stderr[-2000:]}")
        d = _chromium(chromium, profile, "--dump-dom", url)
    if d.returncode != 0 or "<html" not in d.stdout:
        raise RuntimeError(f"chromium --dump-dom failed (exit {d.returncode}): {d.stderr[-2000:]}")
    pixels = screenshot_checks(shot)
    dom = dom_checks(d.stdout)
    return {"screenshot": shot, "pixels": pixels, "dom": dom, "ok": pixels["not_blank"] and dom["ok"]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--log", default=None, help="an event log (default: make one with a small job)")
    p.add_argument("--backend", default="threads", choices=["threads", "processes", "ray"])
    p.add_argument("--out", default=None, help="where the report and the screenshot go (default: a temp dir)")
    p.add_argument("--chromium", default=None, help=f"the browser (default: the first of {', '.join(BROWSERS)})")
    p.add_argument("--window", default="1280x6000", help="screenshot size WIDTHxHEIGHT")
    args = p.parse_args(argv)
    chromium = args.chromium or find_chromium()
    if not chromium:
        print("no Chromium found: apt-get install -y chromium (Debian), or give --chromium PATH", file=sys.stderr)
        return 2
    from strataflow.report import render_report

    out = args.out or tempfile.mkdtemp(prefix="sf-report-")
    os.makedirs(out, exist_ok=True)
    log = args.log or make_log(os.path.join(out, "events.jsonl"), args.backend)
    report = render_report(log, os.path.join(out, "report"))
    result = {"log": log, "html": report["html"], "chromium": chromium,
              **check_in_browser(report["html"], out, chromium, args.window.replace("x", ","))}
    emit_json(result)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
