"""Where a workload ran, as a result holds it: the backend the plugin mounted, the CPUs the
daemon and the load were pinned to, and what the rest of the machine used meanwhile."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mounted:
    """The backend the plugin mounted, as a result names it (secrets masked)."""

    backend: str
    options: tuple[str, ...]
    command: tuple[str, ...]
    store: str = ""  # the conditions of the store behind it ("in-region: rtt 2 ms, ..."); "": none


@dataclass(frozen=True)
class Placement:
    daemon: tuple[int, ...]
    load: tuple[int, ...]

    def shown(self) -> str:
        return f"daemon on CPU {cpus_text(self.daemon)}, load on CPU {cpus_text(self.load)}"


def cpus_text(cpus: tuple[int, ...]) -> str:
    """1, 2-3 or 0,4-5: runs of consecutive CPUs joined."""
    parts: list[str] = []
    for cpu in cpus:
        if parts and cpu == int(parts[-1].rpartition("-")[2]) + 1:
            parts[-1] = f"{parts[-1].partition('-')[0]}-{cpu}"
        else:
            parts.append(str(cpu))
    return ",".join(parts)


@dataclass(frozen=True)
class Rest:
    """Cores (CPU-seconds per second of the window) used by the rest of the machine."""

    cpu: float  # busy CPU of the processes that are not the daemon's, ours or the kernel's
    steal: float  # a VM's vCPUs waiting while the host ran someone else (0 on bare metal)
    idle: float | None = None  # CPU nobody used (idle and iowait); None: not read
