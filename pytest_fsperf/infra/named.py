"""A new directory of the plugin's under a shared parent (a tracefs instance, a cgroup): a
random name, noted in the session's leftovers record before it exists."""

from __future__ import annotations

import os
from collections.abc import Callable

from pytest_fsperf.infra import leftovers


def fresh_dir(base: str, prefix: str, note: Callable[[str], leftovers.Entry],
              what: str) -> tuple[str, leftovers.Entry]:
    for _ in range(20):
        path = os.path.join(base, prefix + os.urandom(6).hex())
        entry = note(path)
        try:
            os.mkdir(path)
        except FileExistsError:
            leftovers.done(entry)
            continue
        return path, entry
    raise FileExistsError(f"no free {what} name under {base}")
