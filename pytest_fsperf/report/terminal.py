"""The terminal summary: one row per measured workload, in the published tables' units."""

from __future__ import annotations

from typing import Any

from .. import units

HEADER = ("test", "workload", "bandwidth", "IOPS", "p99 lat", "daemon CPU", "daemon peak mem",
          "cache", "verdict")
FIGURES = range(2, 7)  # right-aligned columns


def _daemon_cells(r: dict[str, Any]) -> tuple[str, str]:
    d = r.get("daemon")
    if not d:
        note = r.get("daemon_note", "")
        short = "no daemon" if note.startswith("no daemon") else "not found"
        return short, short
    mem = units.format_mb(d["peak_rss_bytes"])
    if d["peak_rss_method"] != "VmHWM":
        mem += " (sampled)"
    return units.format_percent(d["cpu_percent"]), mem


def row(r: dict[str, Any]) -> tuple[str, ...]:
    total = r["total"]
    p99 = total.get("lat_p99_ns")
    cpu, mem = _daemon_cells(r)
    return (
        r["test"].rsplit("::", 1)[-1],
        r["name"],
        units.format_rate(total["bw_bytes"]),
        units.format_count(total["iops"]),
        units.format_duration(p99) if p99 is not None else "-",
        cpu,
        mem,
        r["cache"],
        r.get("verdict", "-"),
    )


def table(results: list[dict[str, Any]]) -> list[str]:
    rows = [HEADER, *(row(r) for r in results)]
    widths = [max(len(cells[i]) for cells in rows) for i in range(len(HEADER))]
    lines = []
    for cells in rows:
        text = "  ".join(c.rjust(w) if i in FIGURES else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True)))
        lines.append(text.rstrip())
    return lines


def footnotes(results: list[dict[str, Any]]) -> list[str]:
    notes = []
    if any(not r.get("daemon") for r in results):
        seen = sorted({r.get("daemon_note", "") for r in results if not r.get("daemon")})
        notes += [f"daemon figures missing: {n}" for n in seen]
    if any(r.get("daemon") and r["daemon"]["peak_rss_method"] != "VmHWM" for r in results):
        notes.append("(sampled): the kernel refused to reset VmHWM; peak memory is the highest "
                     "RSS sampled every 0.25 s and may miss short peaks")
    notes.append("CPU: 100% = one fully busy core; bandwidth and memory in powers of 1000")
    return notes
