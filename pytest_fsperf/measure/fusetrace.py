"""The FUSE requests the kernel sent a mount's daemon during a workload, from the kernel's
own tracepoints fuse:fuse_request_send and fuse:fuse_request_end.

Each window gets a tracefs instance of its own (instances/fsperf-<hex>, root only, noted
in the session's leftovers record before it exists), with both events filtered in the
kernel to the mount's connection and timestamped on CLOCK_MONOTONIC, the clock of the
window. Events stay in the kernel's ring buffer while the workload runs (no reader wakes
per event); a watcher drains it only when it fills past half, and whatever was lost is
counted from the buffer's own statistics and said. Per opcode: requests sent in the
window, errors, payload bytes and the time from send to end (queueing plus the daemon's
service, as the kernel sees it).
"""

from __future__ import annotations

import array
import bisect
import contextlib
import enum
import errno
import os
import re
import threading
import time
from collections.abc import Iterator

from pytest_fsperf.infra import leftovers
from pytest_fsperf.infra.named import fresh_dir
from pytest_fsperf.result.fuse import FuseOp, FuseRequests

TRACEFS = "/sys/kernel/tracing"
EVENTS = ("fuse_request_send", "fuse_request_end")
PREFIX = "fsperf-"
BUFFER_KB = 32768  # per CPU: about 800k events each
MAX_TOTAL_KB = 1 << 20  # never more than 1 GiB of buffers on a machine of many CPUs
DRAIN_EVERY = 1.0  # s between looks at the buffer's fill
IN_HEADER, OUT_HEADER = 40, 16  # sizeof(struct fuse_in_header), sizeof(struct fuse_out_header)
WRITE_IN = 40  # sizeof(struct fuse_write_in): a WRITE request's data follows it


_LINE = re.compile(rb" (\d+)\.(\d{6}): fuse_request_(?:send: connection (\d+) req (\d+) opcode "
                   rb"\d+ \((\w+)\) len (\d+)|end: connection (\d+) req (\d+) len (\d+) "
                   rb"error (-?\d+))")


class Tracing(enum.Enum):
    AUTO = "auto"  # where the tracepoints exist and the plugin is root (default)
    ON = "on"  # a session that cannot trace stops at its start, saying why
    OFF = "off"


def connection_id(major: int, minor: int) -> int:
    """The kernel's dev_t of a mount (MKDEV), as the tracepoints print it."""
    return (major << 20) | minor


def unavailable(root: str = TRACEFS) -> str | None:
    """Why the FUSE tracepoints cannot be used here, or None when they can."""
    if os.geteuid() != 0:
        return "not root (tracefs is root's)"
    if not os.path.isdir(os.path.join(root, "instances")):
        return f"tracefs is not mounted at {root}"
    missing = [e for e in EVENTS if not os.path.isdir(os.path.join(root, "events", "fuse", e))]
    if missing:
        return f"this kernel has no fuse:{missing[0]} tracepoint"
    return None


def _percentile(ordered: list[float], q: float) -> float:
    """Nearest rank, as fio reports its percentiles."""
    rank = max(1, -(-len(ordered) * q // 100))
    return ordered[int(rank) - 1]


class Events:
    """Sends and ends parsed from the trace text, paired by request id as they are read.
    A paired request is kept in flat arrays (send and end time, opcode, lengths, error: 39
    bytes a request for 100,000 READs under tracemalloc, against 423 as two dicts of
    tuples): a 100 GB read is 763,000 READs of 128 KiB. Only requests still in flight, or
    ends read before their send, are kept by id."""

    def __init__(self, connection: int) -> None:
        self.connection = connection
        self._names: list[str] = []  # opcode names (without FUSE_), by index
        self._index: dict[str, int] = {}
        self._sent: dict[int, tuple[float, int, int]] = {}  # in flight: unique -> (t, op, len)
        self._early: dict[int, tuple[float, int, int]] = {}  # an end read before its send
        self._t = array.array("d")  # each answered request: send time, s
        self._t_end = array.array("d")  # its end, s
        self._op = array.array("H")
        self._len_in = array.array("q")  # the request's length
        self._len_out = array.array("q")  # the reply's length
        self._err = array.array("i")
        self._partial = b""  # a line the last read cut short

    def feed(self, chunk: bytes) -> None:
        conn = str(self.connection).encode()
        text, _, self._partial = (self._partial + chunk).rpartition(b"\n")
        for m in _LINE.finditer(text):
            t = int(m.group(1)) + int(m.group(2)) / 1e6
            if m.group(3) is not None:
                if m.group(3) == conn:
                    self._send(int(m.group(4)), t, m.group(5).decode(), int(m.group(6)))
            elif m.group(7) == conn:
                self._end(int(m.group(8)), t, int(m.group(9)), int(m.group(10)))

    def _send(self, unique: int, t: float, opcode: str, length: int) -> None:
        name = opcode.removeprefix("FUSE_")
        op = self._index.setdefault(name, len(self._names))
        if op == len(self._names):
            self._names.append(name)
        early = self._early.pop(unique, None)
        if early is None:
            self._sent[unique] = (t, op, length)
        else:
            self._keep(t, op, length, *early)

    def _end(self, unique: int, t: float, length: int, error: int) -> None:
        sent = self._sent.pop(unique, None)
        if sent is None:
            self._early[unique] = (t, length, error)
        else:
            self._keep(*sent, t, length, error)

    def _keep(self, t: float, op: int, len_in: int, t_end: float, len_out: int, error: int) -> None:
        self._t.append(t)
        self._t_end.append(t_end)
        self._op.append(op)
        self._len_in.append(len_in)
        self._len_out.append(len_out)
        self._err.append(error)

    def _window(self, t0: float, t1: float) -> Iterator[tuple[float, str, int, float | None, int, int]]:
        """(send time, opcode, request length, end time or None, reply length, error) of each
        request sent from t0 to t1."""
        names = self._names
        for i, t in enumerate(self._t):
            if t0 <= t <= t1:
                yield (t, names[self._op[i]], self._len_in[i], self._t_end[i],
                       self._len_out[i], self._err[i])
        for t, op, length in self._sent.values():
            if t0 <= t <= t1:
                yield t, names[op], length, None, 0, 0

    def summary(self, t0: float, t1: float, lost: int) -> FuseRequests:
        """The requests sent from t0 to t1 (monotonic seconds)."""
        times: dict[str, list[float]] = {}
        counts: dict[str, int] = {}
        errors: dict[str, dict[str, int]] = {}
        payload: dict[str, int] = {}
        open_: dict[str, int] = {}
        for t, name, length, end, out, error in self._window(t0, t1):
            counts[name] = counts.get(name, 0) + 1
            if name == "WRITE":
                payload[name] = payload.get(name, 0) + max(0, length - IN_HEADER - WRITE_IN)
            if end is None or end > t1:
                open_[name] = open_.get(name, 0) + 1
            else:
                times.setdefault(name, []).append(1e6 * (end - t))
                if error:
                    code = errno.errorcode.get(-error, str(error))
                    errors.setdefault(name, {})[code] = errors.setdefault(name, {}).get(code, 0) + 1
                elif name == "READ":
                    payload[name] = payload.get(name, 0) + max(0, out - OUT_HEADER)
        ops = []
        for name, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
            ordered = sorted(times.get(name, []))
            ops.append(FuseOp(name, n, errors.get(name, {}), payload.get(name, 0),
                              round(_percentile(ordered, 50), 1) if ordered else None,
                              round(_percentile(ordered, 99), 1) if ordered else None,
                              open_.get(name, 0)))
        return FuseRequests(self.connection, round(t1 - t0, 3), tuple(ops), lost)

    def per_interval(self, t0: float, t1: float, edges: list[float]) -> dict[str, list[int]]:
        """Requests sent in each interval ending at edges[i] (after edges[i-1], t0 first), by
        opcode: the timeline's FUSE op rates."""
        per: dict[str, list[int]] = {}
        for t, name, *_rest in self._window(t0, t1):
            row = per.setdefault(name, [0] * len(edges))
            row[min(bisect.bisect_left(edges, t), len(edges) - 1)] += 1
        return per


class Trace:
    """One window's trace of one FUSE connection: open(), start(), stop(), summary(t0, t1).
    Always close() (it removes the instance), also after a failure."""

    def __init__(self, connection: int, root: str = TRACEFS, buffer_kb: int = BUFFER_KB) -> None:
        self.connection = connection
        self._root = root
        ncpu = os.cpu_count() or 1
        self._buffer_kb = max(1024, min(buffer_kb, MAX_TOTAL_KB // ncpu))
        self.path = ""
        self._entry: leftovers.Entry = None
        self._events = Events(connection)
        self._pipe: int | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _write(self, name: str, value: str) -> None:
        with open(os.path.join(self.path, name), "w", encoding="ascii") as f:
            f.write(value)

    def open(self) -> None:
        """Make the instance and arm its events (tracing still off)."""
        self.path, self._entry = fresh_dir(os.path.join(self._root, "instances"), PREFIX,
                                           leftovers.note_trace, "tracefs instance")
        self._write("tracing_on", "0")
        self._write("trace_clock", "mono")
        self._write("options/overwrite", "0")  # a full buffer drops new events, and counts them
        self._write("buffer_size_kb", str(self._buffer_kb))
        for event in EVENTS:
            self._write(f"events/fuse/{event}/filter", f"connection == {self.connection}")
            self._write(f"events/fuse/{event}/enable", "1")
        self._pipe = os.open(os.path.join(self.path, "trace_pipe"), os.O_RDONLY | os.O_NONBLOCK)

    def start(self) -> None:
        self._write("tracing_on", "1")
        self._thread = threading.Thread(target=self._watch, name="fsperf-fuse-trace", daemon=True)
        self._thread.start()

    def _stats(self) -> tuple[int, int]:
        """(bytes unread in the fullest CPU's buffer, events lost over every CPU's)."""
        fullest = lost = 0
        per_cpu = os.path.join(self.path, "per_cpu")
        for cpu in os.listdir(per_cpu):
            with open(os.path.join(per_cpu, cpu, "stats"), encoding="ascii") as f:
                for line in f:
                    key, _, value = line.partition(":")
                    if key == "bytes":
                        fullest = max(fullest, int(value))
                    elif key in ("overrun", "dropped events"):
                        lost += int(value)
        return fullest, lost

    def _drain(self) -> None:
        assert self._pipe is not None  # the watcher's thread or stop(), after it has joined
        while True:
            try:
                chunk = os.read(self._pipe, 1 << 20)
            except BlockingIOError:
                return
            if not chunk:
                return
            self._events.feed(chunk)

    def _watch(self) -> None:
        """Drain the buffers only when one is half full: a short window is read once, at
        its end, and costs the workload nothing but the kernel's writing of each event."""
        half = self._buffer_kb * 1024 // 2
        while not self._stop.wait(DRAIN_EVERY):
            with contextlib.suppress(OSError, ValueError):
                if self._stats()[0] > half:
                    self._drain()

    def stop(self) -> None:
        """Stop tracing and take in what the buffers hold."""
        time.sleep(0.01)  # let an answer racing the window's end land
        self._write("tracing_on", "0")
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._drain()

    def summary(self, t0: float, t1: float) -> FuseRequests:
        """The requests sent from t0 to t1 (time.monotonic())."""
        _, lost = self._stats()
        return self._events.summary(t0, t1, lost)

    def per_interval(self, t0: float, t1: float, edges: list[float]) -> dict[str, list[int]]:
        return self._events.per_interval(t0, t1, edges)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._pipe is not None:
            os.close(self._pipe)
            self._pipe = None
        if self.path:
            with contextlib.suppress(OSError):
                self._write("tracing_on", "0")
            for event in EVENTS:
                with contextlib.suppress(OSError):
                    self._write(f"events/fuse/{event}/enable", "0")
            try:
                os.rmdir(self.path)
            except OSError:
                return  # left to the record: the next session removes it
            leftovers.done(self._entry)
            self.path = ""


@contextlib.contextmanager
def traced(connection: int, root: str = TRACEFS) -> Iterator[Trace]:
    trace = Trace(connection, root)
    try:
        trace.open()
        yield trace
    finally:
        trace.close()
