"""The HTML page: one file that opens anywhere, with no network.

Images are inlined as base64 PNG (``data:`` URIs), the style sheet is inline, and there
is no script and no link to anything outside the file, so the page can be mailed,
archived with the log, or opened on a machine with no network.
"""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass

from strataflow.report.stages import StageRow
from strataflow.report.summary import Row

__all__ = ["Section", "render_page"]

MIB = 1 << 20  # the unit of every byte figure on the page, as `strataflow run` prints
STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1200px; color: #222; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.8em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 0.9em; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f0f0f0; } img { max-width: 100%; border: 1px solid #eee; }
p.nochart { border: 1px dashed #aaa; padding: 1em; color: #555; background: #fafafa; }
p.note { color: #555; font-size: 0.9em; } nav a { margin-right: 1em; }
"""


@dataclass
class Section:
    """One part of the page: an id (its anchor), a title, an explanation, a chart (a PNG
    path, or None), any extra HTML (tables), and ``missing``: why a chart that belongs
    here was not drawn (shown in its place)."""

    id: str
    title: str
    note: str
    png: str | None = None
    extra: str = ""
    missing: str = ""


def _img(path: str, alt: str) -> str:
    with open(path, "rb") as fh:
        data = base64.b64encode(fh.read()).decode("ascii")
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def summary_table(rows: list[Row]) -> str:
    out = ['<table id="summary-table"><tr><th>what</th><th>value</th></tr>']
    for r in rows:
        value = "" if r.value is None else html.escape(str(r.value))
        out.append(f'<tr><td>{html.escape(r.label)}</td><td class="n" data-key="{html.escape(r.key)}" '
                   f'data-value="{value}">{html.escape(r.text)}</td></tr>')
    out.append("</table>")
    return "\n".join(out)


def stage_table(rows: list[StageRow], limit: int = 300) -> str:
    cols = ("stage", "job", "name", "kind", "tasks", "seconds", "memory hits", "disk hits", "misses", "hit ratio",
            "MiB dropped", "MiB re-cached", "MiB disk written")
    out = ['<table id="stage-table"><tr>' + "".join(f"<th>{c}</th>" for c in cols) + "</tr>"]
    for r in rows[:limit]:
        c = r.cache
        ratio = "-" if r.hit_ratio is None else f"{r.hit_ratio:.0%}"
        cells = [str(r.stage_id), str(r.job_id), html.escape(r.name), html.escape(r.kind), str(r.tasks),
                 f"{r.seconds:.3f}", f"{c.get('memory_hits', 0):.0f}", f"{c.get('disk_hits', 0):.0f}",
                 f"{c.get('misses', 0):.0f}", ratio, f"{c.get('bytes_dropped', 0) / MIB:,.2f}",
                 f"{c.get('bytes_recached', 0) / MIB:,.2f}", f"{c.get('disk_bytes_written', 0) / MIB:,.2f}"]
        style = "" if r.ok else ' style="background:#fdd"'
        out.append(f"<tr{style}>" + "".join(f'<td class="n">{x}</td>' if i != 2 else f"<td>{x}</td>"
                                           for i, x in enumerate(cells)) + "</tr>")
    out.append("</table>")
    if len(rows) > limit:
        out.append(f'<p class="note">the first {limit} of {len(rows)} stages</p>')
    return "\n".join(out)


def simulator_table(report: dict, measured: float | None, used: str | None = None) -> str:
    pol = report["policies"]
    opt = pol["opt"]["byte_hit_ratio"]
    out = ['<table id="simulator-table"><tr><th>policy</th><th>byte hit ratio</th><th>of opt</th>'
           '<th>MiB moved</th><th>MiB read from disk</th><th>est. s</th><th></th></tr>']
    for name, r in pol.items():
        share = f"{r['byte_hit_ratio'] / opt:.2f}" if opt > 0 else "-"
        note = "the policy this run used" if name == used else ""
        out.append(f'<tr><td>{html.escape(name)}</td><td class="n">{r["byte_hit_ratio"]:.3f}</td>'
                   f'<td class="n">{share}</td><td class="n">{r["bytes_moved"] / MIB:,.1f}</td>'
                   f'<td class="n">{r["disk_hit_bytes"] / MIB:,.1f}</td><td class="n">{r["est_s"]:.3f}</td>'
                   f"<td>{note}</td></tr>")
    if measured is not None:
        out.append(f'<tr><td>this run (measured)</td><td class="n">{measured:.3f}</td>'
                   f'<td class="n">{measured / opt if opt > 0 else 0:.2f}</td><td></td><td></td><td></td>'
                   f"<td>as the engine logged each read</td></tr>")
    out.append("</table>")
    return "\n".join(out)


def auto_table(choices: list[dict]) -> str:
    out = ['<table id="auto-table"><tr><th>s</th><th>executor</th><th>dataset</th><th>level</th><th>before</th>'
           '<th>reason</th></tr>']
    for c in choices:
        out.append("<tr>" + "".join(f"<td>{html.escape(str(x))}</td>" for x in (
            f"{c['t']:.2f}", c.get("executor", "-"), c.get("name", c.get("dataset_id")), c.get("level"),
            c.get("before") or "-", c.get("reason", ""))) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def render_page(title: str, subtitle: str, sections: list[Section]) -> str:
    """The page's HTML text: a heading, a table of contents, then each section."""
    nav = "".join(f'<a href="#{s.id}">{html.escape(s.title)}</a>' for s in sections)
    body = []
    for s in sections:
        img = (_img(s.png, s.title) if s.png else
               f'<p class="nochart">{html.escape(s.missing)}</p>' if s.missing else "")
        body.append(f'<section id="{s.id}"><h2>{html.escape(s.title)}</h2><p class="note">{html.escape(s.note)}</p>'
                    f"{img}{s.extra}</section>")
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f"<style>{STYLE}</style></head>\n<body><h1>{html.escape(title)}</h1>"
            f'<p class="note">{html.escape(subtitle)}</p><nav>{nav}</nav>\n' + "\n".join(body) + "\n</body></html>\n")
