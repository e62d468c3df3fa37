"""A program the plugin builds for root to run (the small-file worker, the store conditions'
proxy), kept in a private cache by the hash of its source: the cache resolved once and
checked 0700 and ours, the program built under a name of its own and checked before use."""

from __future__ import annotations

import os
from collections.abc import Callable

from pytest_fsperf.infra import trust


def built(cache: str, name: str, build: Callable[[str, str], None], what: str
          ) -> tuple[str | None, str]:
    """The program `name` in `cache`, made by build(cache, path) where missing (which raises
    OSError when it cannot): its checked path, or None and why root may not run it."""
    os.makedirs(cache, 0o700, exist_ok=True)
    cache, why = trust.resolved(cache)  # resolved once: what is checked is used
    if why or os.stat(cache).st_mode & 0o077:
        return None, f"{what}'s cache is not private: {why or f'{cache} is not 0700'}"
    path = os.path.join(cache, name)
    if not os.path.lexists(path):
        build(cache, path)
    why = trust.untrusted(path)
    if why or os.path.islink(path):
        return None, f"{what} is not run: {why or f'{path} is a symlink'}"
    return path, ""
