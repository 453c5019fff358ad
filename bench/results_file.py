"""How every benchmark records its run: one header naming the machine and the
date, and the same table twice, as Markdown for people and JSON for tools,
in bench/results/NAME.md and NAME.json; and the formatting of the cells the
dynamics tables share (times, ratios against a target).
"""
import datetime
import json
import os
import pathlib
import platform


def run_header(title):
    """``title, date, host (cores, Python)``: a figure is a measurement with a date and a machine."""
    return (f"{title}, {datetime.date.today().isoformat()}, {platform.node() or 'unknown'} "
            f"({platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()})")


def write_results(directory, name, markdown, data):
    """Write ``markdown`` (ending in a newline) and ``data`` (JSON-able); print where."""
    out = pathlib.Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.md").write_text(markdown if markdown.endswith("\n") else markdown + "\n")
    (out / f"{name}.json").write_text(json.dumps(data, indent=2))
    print(f"[bench] results written to {out / name}.md and .json")


def fmt(value, digits=2):
    """A number for a table cell (``-`` when not measured)."""
    if value is None:
        return "-"
    return f"{value:.{digits}f}" if abs(value) < 1e4 else f"{value:.3g}"


def ratio_cell(ours, theirs, target):
    """``ours / theirs`` for a table, in bold when it misses ``target``."""
    if not ours or not theirs:
        return "-"
    ratio = ours / theirs
    return f"**{ratio:.2f}**" if ratio > target else f"{ratio:.2f}"
