"""Parse and format the units of thresholds and reports.

Thresholds use explicit units: B, kB/KB, MB, GB, TB are powers of 1000 (as the
published benchmarks use); KiB, MiB, GiB, TiB are powers of 1024. Rates take an
optional "/s". CPU is in percent of one core. Latency takes ns, us, ms or s.
"""

from __future__ import annotations

import math
import re

BYTE_UNITS: dict[str, int] = {
    "B": 1,
    "kB": 10**3,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "KiB": 2**10,
    "MiB": 2**20,
    "GiB": 2**30,
    "TiB": 2**40,
}
TIME_UNITS: dict[str, float] = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}

# digits 0-9 only: Python's float() also takes 1_0 and other scripts' digits (٣)
_NUMBER = r"(?P<num>(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)"
_QUANTITY = re.compile(rf"^\s*{_NUMBER}\s*(?P<unit>[^\s0-9.][^\s]*)?\s*$", re.ASCII)
_PLAIN = re.compile(rf"^\s*{_NUMBER}\s*$", re.ASCII)


def cut_repr(value: object) -> str:
    """A value as an error quotes it: its repr, cut (a 5000-digit number is one short line)."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:30]}... ({len(text)} characters)"


def _split(text: str) -> tuple[float, str]:
    match = _QUANTITY.match(text)
    if not match:
        raise ValueError(f"{cut_repr(text)} is not a number with a unit")
    value = float(match["num"])
    if not math.isfinite(value):
        raise ValueError(f"{cut_repr(text)} is not a finite number")
    return value, match["unit"] or ""


def _finite(value: float, text: object) -> float:
    if not math.isfinite(value):
        raise ValueError(f"{cut_repr(text)} is too large")
    return value


def _require_text(value: object, example: str) -> str:
    if isinstance(value, bool) or not isinstance(value, str):
        raise ValueError(f"{cut_repr(value)} needs a unit, e.g. {example!r}")
    return value


def parse_bytes(value: object, *, rate: bool = False) -> float:
    """'2.2GB' -> 2.2e9; with rate=True '2GB/s' (the '/s' is optional)."""
    text = _require_text(value, "2GB/s" if rate else "2.2GB")
    number, unit = _split(text)
    if rate and unit.endswith("/s"):
        unit = unit[:-2]
    if unit not in BYTE_UNITS:
        units = ", ".join(BYTE_UNITS)
        raise ValueError(f"{cut_repr(text)} has unknown unit {unit or '(none)'!r}; use one of {units}")
    return _finite(number * BYTE_UNITS[unit], text)


def parse_percent(value: object, example: str = "250%", meaning: str = "100% = one core") -> float:
    """'250%' -> 250.0; `example` and `meaning` say what kind of percentage is asked for in
    the error (a CPU share by default; '10%' for a tolerance)."""
    text = _require_text(value, example)
    number, unit = _split(text)
    if unit != "%":
        raise ValueError(f"{cut_repr(text)} must be a percentage such as '{example}'"
                         + (f" ({meaning})" if meaning else ""))
    return number


def parse_tolerance(value: object) -> float:
    """'10%' -> 0.10: how far a figure may move before it counts as changed."""
    return parse_percent(value, "10%", "") / 100


def parse_duration_ns(value: object) -> float:
    """'20ms' -> 2e7 nanoseconds."""
    text = _require_text(value, "20ms")
    number, unit = _split(text)
    if unit not in TIME_UNITS:
        raise ValueError(f"{cut_repr(text)} has unknown time unit {unit or '(none)'!r}; use ns, us, ms or s")
    return _finite(number * TIME_UNITS[unit], text)


def plain_number(value: object) -> float:
    """A non-negative finite number written plainly (digits 0-9), or a number that is one."""
    if isinstance(value, bool):
        raise ValueError(f"{cut_repr(value)} is not a number")
    if isinstance(value, int | float):
        try:
            number = float(value)
        except OverflowError:
            raise ValueError(f"{cut_repr(value)} is too large") from None
    elif isinstance(value, str) and (match := _PLAIN.match(value)):
        number = float(match["num"])
    else:
        raise ValueError(f"{cut_repr(value)} is not a number")
    if not math.isfinite(number) or number < 0:
        raise ValueError(f"{cut_repr(value)} is not a non-negative finite number")
    return number


def parse_rate_count(value: object) -> float:
    """A plain count per second: 5000, '5000', '5000/s'."""
    if not isinstance(value, str):
        return plain_number(value)
    number, unit = _split(value)
    if unit not in ("", "/s"):
        raise ValueError(f"{cut_repr(value)} must be a plain number per second, such as '5000/s'")
    return number


def _three_figures(value: float) -> str:
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def format_rate(bytes_per_s: float) -> str:
    """As the published tables print bandwidth: '2.17 GB/s', '812 MB/s'."""
    if bytes_per_s >= 1e9:
        return f"{_three_figures(bytes_per_s / 1e9)} GB/s"
    return f"{_three_figures(bytes_per_s / 1e6)} MB/s"


def format_mb(n_bytes: float) -> str:
    """Memory in MB, as the published tables print peak memory: '2167 MB'."""
    return f"{_three_figures(n_bytes / 1e6)} MB"


def format_limit(n_bytes: float) -> str:
    """A limit as it was most likely given (cgroups and containers write powers of 1024):
    '48 MiB (50.3 MB)', the MB for the figures beside it."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20)):
        if n_bytes >= size and n_bytes % (size // 1024 or 1) == 0:
            count = n_bytes / size
            shown = f"{count:.0f}" if count == int(count) else _three_figures(count)
            return f"{shown} {unit} ({format_mb(n_bytes)})"
    return format_mb(n_bytes)


def format_percent(value: float) -> str:
    return f"{value:.0f}%"


def format_duration(ns: float) -> str:
    if ns >= 1e9:
        return f"{_three_figures(ns / 1e9)} s"
    if ns >= 1e6:
        return f"{_three_figures(ns / 1e6)} ms"
    if ns >= 1e3:
        return f"{_three_figures(ns / 1e3)} us"
    return f"{ns:.0f} ns"


def parse_count(value: object) -> float:
    """A plain count, no unit: 1000, '1000'."""
    if isinstance(value, str) and value.strip().endswith("/s"):
        raise ValueError(f"{cut_repr(value)} must be a plain count, such as 1000")
    return parse_rate_count(value)


def format_count(value: float) -> str:
    if value < 1e4 and float(value).is_integer():
        return str(int(value))  # a count: 10, not 10.0
    if value >= 1e6:
        return f"{_three_figures(value / 1e6)}M"
    if value >= 1e4:
        return f"{_three_figures(value / 1e3)}k"
    return _three_figures(value)


def parse_money(value: object) -> float:
    """An amount in the price list's currency: 0.01, '0.01', '$0.01'."""
    text = str(value).strip().removeprefix("$").strip()
    try:
        amount = plain_number(text if isinstance(value, str) else value)
    except ValueError:
        raise ValueError(f"{cut_repr(value)} is not an amount; give one such as 0.01 (in the price "
                         "list's currency)") from None
    if not math.isfinite(amount) or amount < 0:
        raise ValueError(f"{cut_repr(value)} must be an amount of 0 or more")
    return amount


def format_money(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    return "0" if value == 0 else f"{value:.3g}" if value >= 0.01 else f"{value:.2g}"


def format_ratio(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def format_size(n_bytes: float) -> str:
    """A size in powers of 1000 with three figures: 65.5 kB, 8.39 MB, 1.07 GB."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n_bytes >= scale:
            return f"{_three_figures(n_bytes / scale)} {unit}"
    return f"{n_bytes:.0f} B"


def parse_seconds(value: object) -> float:
    """'3s', '500ms' -> seconds."""
    return parse_duration_ns(value) / 1e9


def format_seconds(seconds: float) -> str:
    return "0 s" if seconds == 0 else format_duration(seconds * 1e9)


def parse_growth(value: object) -> float:
    """A memory growth rate, bytes per minute: '50MB/min', '1GB/h'."""
    text = _require_text(value, "50MB/min")
    amount, _, per = text.replace(" ", "").partition("/")
    minutes = {"min": 1.0, "m": 1.0, "h": 60.0, "s": 1 / 60}.get(per)
    if minutes is None:
        raise ValueError(f"{cut_repr(text)} must be a size per time, such as 50MB/min or 1GB/h")
    return parse_bytes(amount) / minutes


def format_growth(bytes_per_min: float) -> str:
    sign = "-" if bytes_per_min < 0 else ""
    return f"{sign}{format_size(abs(bytes_per_min))}/min"
