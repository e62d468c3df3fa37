"""A round trip as a network gives it (issue 73): the packets a store sends to the daemons on
loopback, held by fsperf-delayer (delayer/delayer.go) behind an iptables NFQUEUE rule, so that
kernel TCP on both ends meets a real round trip (windows, slow start, ACK clocking) where the
conditions' proxy models one. It changes a firewall: only ever in a network namespace other
than the machine's own (`unshare -n`, as benchmarks/rtt_reference.py runs)."""

from __future__ import annotations

import functools
import json
import os
import select
import shutil
import signal
import subprocess
from dataclasses import dataclass

import psutil

from pytest_fsperf.errors import MeasurementError
from pytest_fsperf.infra import leftovers, trust
from pytest_fsperf.infra.procs import Proc, stop_child
from pytest_fsperf.store import gobuild

NAME = "fsperf-delayer"
SOURCES = ("delayer.go", "go.mod")
IPTABLES = "iptables-legacy"  # the NFQUEUE target (this kernel has no nft queue)


@functools.lru_cache(maxsize=1)
def binary() -> tuple[str | None, str]:
    return gobuild.built("delayer", NAME, SOURCES, "the packet delayer")


def own_namespace() -> bool:
    """Whether this process's network namespace has no interface but loopback (`unshare -n`
    makes one): nothing outside this machine's processes reaches it, and a rule there changes
    no other namespace's firewall. (PID 1's namespace cannot be read in every container.)"""
    try:
        with open("/proc/self/net/dev", encoding="ascii") as f:
            names = [line.split(":", 1)[0].strip() for line in f.readlines()[2:]]
    except OSError:
        return False
    return names == ["lo"]


@dataclass
class Delay:
    """Packets from 127.0.0.1:`port` held `seconds` each, while it runs."""

    port: int
    seconds: float
    proc: subprocess.Popen[bytes]
    rule: tuple[str, ...]
    stats_path: str
    private: str
    entries: tuple[leftovers.Entry, ...]

    def stats(self) -> dict[str, float]:
        """Packets held, how late past the delay each batch was let go (p50, p99, max, s),
        and the delayer's CPU seconds so far."""
        out: dict[str, float] = {}
        try:
            cpu = psutil.Process(self.proc.pid).cpu_times()
            out["cpu_seconds"] = cpu.user + cpu.system
        except psutil.Error:
            pass
        if self.proc.poll() is None:
            before = os.path.getmtime(self.stats_path) if os.path.exists(self.stats_path) else 0
            self.proc.send_signal(signal.SIGUSR1)
            for _ in range(200):
                if os.path.exists(self.stats_path) and os.path.getmtime(self.stats_path) != before:
                    break
                select.select([], [], [], 0.01)
        try:
            with open(self.stats_path, encoding="utf-8") as f:
                got = json.load(f)
        except (OSError, ValueError):
            return out
        out["packets"] = float(got.get("packets", 0))
        for k in ("p50", "p99", "max"):
            if f"late_{k}_ns" in got:
                out[f"late_{k}"] = got[f"late_{k}_ns"] / 1e9
        return out

    def stop(self) -> None:
        i = self.rule.index("-A")  # the same rule, deleted
        subprocess.run([*self.rule[:i], "-D", *self.rule[i + 1:]], capture_output=True, check=False)
        stop_child(self.proc)
        shutil.rmtree(self.private, ignore_errors=True)
        for entry in self.entries:
            leftovers.done(entry)


def start(port: int, seconds: float, queue: int = 73) -> Delay:
    """Hold every TCP packet from 127.0.0.1:`port` arriving on loopback for `seconds`."""
    if not own_namespace():
        raise MeasurementError("delayed packets change a firewall: only in a network namespace of "
                               "the caller's own (run under `unshare -n`)")
    path, why = binary()
    if path is None:
        raise MeasurementError(f"the packet delayer: {why}")
    ipt, why = trust.program(IPTABLES)
    if why:
        raise MeasurementError(f"the packet delayer needs {IPTABLES}: {why}")
    if os.path.basename(ipt[-1]).startswith("xtables"):  # the link's target: a multi-call
        ipt = [*ipt, "iptables"]  # program, told by its first argument which one it is
    private, dir_entry = leftovers.private_dir("pytest-fsperf-delay-")
    stats_path = os.path.join(private, "stats.json")
    argv = [path, str(queue), str(int(seconds * 1e9)), stats_path]
    chrt = shutil.which("chrt")  # real-time priority: its wake-ups on time under load
    proc = subprocess.Popen([chrt, "-f", "50", *argv] if chrt else argv, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd="/",
                            start_new_session=True, env={"PATH": "/usr/bin:/bin"})
    entry = leftovers.note_process(Proc.of(proc.pid))
    rule = (*ipt, "-A", "INPUT", "-i", "lo", "-p", "tcp", "-s", "127.0.0.1", "--sport", str(port),
            "-j", "NFQUEUE", "--queue-num", str(queue))
    found = Delay(port, seconds, proc, tuple(rule), stats_path, private, (entry, dir_entry))
    assert proc.stdout is not None and proc.stderr is not None
    ready, _, _ = select.select([proc.stdout], [], [], 10)
    if not ready or proc.stdout.readline().strip() != b"ready":
        err = proc.stderr.read(300).decode(errors="replace") if proc.poll() is not None else ""
        found.stop()
        raise MeasurementError(f"the packet delayer did not start: {err.strip() or 'no answer'}")
    done = subprocess.run(rule, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        found.stop()
        raise MeasurementError(f"{IPTABLES}: {done.stderr.strip()[-200:]}")
    return found
