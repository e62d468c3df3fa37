"""A VM's free page reporting, waited out after a cache drop so that every cold run meets
the same memory.

A virtio balloon with free page reporting (Firecracker, QEMU's free-page-reporting=on) hands
free memory back to the host about 2 s after it was freed, in passes of 2 s each; a page the
guest takes again then costs a host fault on first touch. After drop_caches, a cold read's
page cache comes from memory that was reported or not, depending on how far the reporting
got: bindfs over this machine's disk read 200 MB at 300-1000 MB/s and 0.5-2.9 daemon CPU-s/GB
at random when read at once, and at 300 +/- 20 MB/s when read after the reporting had
finished (issue 24). Waiting costs 4-6 s per 200 MB dropped here, 12-15 s per GiB, so an
A/B waits only once its runs have shown they need it (Settle.AUTO).
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable

INTERRUPTS = "/proc/interrupts"
QUIET = 2.2  # s without a report: past the kernel's 2 s reporting delay (PAGE_REPORTING_DELAY)
LIMIT = 30.0  # s: never wait longer than this


class Settle(enum.Enum):
    # In an interleaved A/B (gate, compare), from the moment a side's runs spread past 1.5x
    # without settling (ab.interleave): the pairs so far are dropped, the rest settle.
    AUTO = "auto"
    ON = "on"  # after every cold start
    OFF = "off"

    def wanted(self, paired: bool, unsteady: bool = False) -> bool:
        return self == Settle.ON or (self == Settle.AUTO and paired and unsteady)


def reports(path: str = INTERRUPTS) -> int | None:
    """The free page reports so far (the balloon's reporting queue's interrupts over all
    CPUs), or None: no free page reporting on this machine."""
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    found = None
    for line in lines:
        words = line.split()
        if words and words[-1].endswith("reporting_vq"):
            found = (found or 0) + sum(int(w) for w in words[1:] if w.isdigit())
    return found


def settle(path: str = INTERRUPTS, quiet: float = QUIET, limit: float = LIMIT,
           clock: Callable[[], float] = time.monotonic,
           sleep: Callable[[float], None] = time.sleep) -> tuple[float, bool] | None:
    """Wait until no free page report came for `quiet` seconds (at most `limit`); returns
    (seconds waited, settled), or None where the machine has no free page reporting."""
    last = reports(path)
    if last is None:
        return None
    start = changed = clock()
    while clock() - changed < quiet:
        if clock() - start >= limit:
            return clock() - start, False
        sleep(0.1)
        now = reports(path)
        if now != last:
            last, changed = now, clock()
    return clock() - start, True


def said(waited: tuple[float, bool]) -> str:
    """The cold step, as results and reports show it."""
    seconds, done = waited
    if done:
        return f"free page reporting settled ({seconds:.1f} s)"
    return f"free page reporting still running after {seconds:.0f} s (the limit)"
