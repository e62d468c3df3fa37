"""State of one pytest session: where to work, and what was measured."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import tempfile
from typing import Any

from .errors import MeasurementError
from .mount.daemon import Lookup, describe, find_daemon
from .mount.mountinfo import Mount, find_mount, read_mounts
from .options import Settings
from .report.environment import environment

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def safe_name(text: str, limit: int = 60) -> str:
    return _UNSAFE.sub("_", text).strip("_")[:limit] or "test"


class FsperfSession:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.results: list[dict[str, Any]] = []  # every measured workload, as reported
        self.leftovers: list[str] = []  # work dirs that could not be removed
        self._default_mount: str | None = None
        self._root: str | None = None
        self._local: str | None = None
        self._count = 0
        self._env: dict[str, Any] | None = None

    @property
    def embedded(self) -> bool:
        return self.settings.mount is None

    @property
    def mount_path(self) -> str:
        if self.settings.mount is not None:
            return str(self.settings.mount)
        if self._default_mount is None:
            self._default_mount = tempfile.mkdtemp(prefix="pytest-fsperf-mount-")
        return self._default_mount

    def mount(self) -> Mount:
        return find_mount(self.mount_path, read_mounts())

    def lookup_daemon(self) -> Lookup:
        if self.settings.daemon_pid is not None:
            return describe(self.settings.daemon_pid, "--fsperf-daemon-pid")
        return find_daemon(self.mount())

    def environment(self) -> dict[str, Any]:
        """The run's environment, read once (on first use, while the mount is up)."""
        if self._env is None:
            mount: Mount | None = None
            lookup: Lookup | None = None
            try:
                mount = self.mount()
                lookup = self.lookup_daemon()
            except (OSError, LookupError):
                pass
            self._env = environment(self.mount_path, mount, lookup, self.settings.scale,
                                    self.embedded)
        return self._env

    def local_dir(self) -> str:
        """A private local directory for fio's output files (never on the mount)."""
        if self._local is None:
            self._local = tempfile.mkdtemp(prefix="pytest-fsperf-out-")
        return self._local

    def new_workdir(self, test_name: str) -> str:
        try:
            if self._root is None:
                root = os.path.join(self.mount_path, f"fsperf-work-{secrets.token_hex(4)}")
                os.mkdir(root, 0o755)
                self._root = root
            self._count += 1
            path = os.path.join(self._root, f"{safe_name(test_name)}-{self._count}")
            os.mkdir(path, 0o755)
        except OSError as exc:
            raise MeasurementError(f"cannot create a work directory in {self.mount_path}: "
                                   f"{exc.strerror or exc}") from None
        return path

    def remove(self, path: str) -> None:
        try:
            shutil.rmtree(path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            self.leftovers.append(f"{path} ({exc.strerror or exc})")

    def close(self) -> None:
        for path in (self._root, self._default_mount, self._local):
            if path is not None:
                self.remove(path)
        self._root = self._default_mount = self._local = None
