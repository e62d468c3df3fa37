"""The environment a session's results were measured in, as types: the machine, the kernel
and its FUSE, the mount and its daemon, the tools, the build, the price list. Read by
report/environment.py; written into the results file and read back (from_dict)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from pytest_fsperf import typed


@dataclass(frozen=True)
class Machine:
    hostname: str
    arch: str
    cpus: int | None
    cpu_model: str | None
    mem_total_bytes: int | None


@dataclass(frozen=True)
class MountFacts:
    """The mount measured, from the mount table (options with secrets masked)."""

    path: str
    mount_point: str
    source: str
    fstype: str
    options: str
    super_options: str


@dataclass(frozen=True)
class DaemonFacts:
    pid: int
    cmdline: tuple[str, ...]  # secrets replaced by ***
    found_by: str


@dataclass(frozen=True)
class FuseKernel:
    """What this kernel's FUSE allows, bounding every FUSE figure."""

    max_pages_limit: int | None = None  # fs.fuse.max_pages_limit: the largest request, in pages
    io_uring: str = "?"  # FUSE over io_uring: enabled, built but off, or not in this kernel
    passthrough: str = "?"  # FUSE_PASSTHROUGH built in or not


@dataclass(frozen=True)
class Build:
    """The build measured: the id given (or the CI's commit), the daemon binary and its hash."""

    id: str | None = None
    daemon_exe: str | None = None
    daemon_sha256: str | None = None


@dataclass(frozen=True)
class Priced:
    """The price list request costs were priced at."""

    name: str
    title: str
    currency: str
    source: str
    checked: str
    origin: str


@dataclass(frozen=True)
class Environment:
    kernel: str
    machine: Machine
    python: str
    pytest: str
    pytest_fsperf: str
    fio: str | None  # fio --version; None where fio is missing
    scale: float
    embedded_default: bool  # no --fsperf-mount: a fresh temp directory was measured
    mount: MountFacts | None
    daemon: DaemonFacts | None
    daemon_note: str
    date: str = ""  # when it was read, UTC
    os: str | None = None  # PRETTY_NAME of /etc/os-release
    fuse_kernel: FuseKernel | None = None
    build: Build = field(default_factory=Build)
    price: Priced | None = None
    backend: str | None = None  # the backend the plugin mounted (None: an existing mount)
    source_note: str | None = None  # what the mounted source really is, where not obvious
    canary: tuple[float, ...] = ()  # the session's machine canary scores

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["build"] = {k: v for k, v in data["build"].items() if v is not None}
        for key in ("price", "backend", "source_note"):
            if data[key] is None:
                del data[key]
        if not self.canary:
            del data["canary"]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Environment:
        """A results file's environment; ValueError names what is wrong."""
        return typed.read(cls, data, "environment")
