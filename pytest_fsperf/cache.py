"""Make the next read cold: flush dirty data, then drop the kernel page cache.

As root: `echo 3 > /proc/sys/vm/drop_caches` (page cache, dentries, inodes).
Otherwise, or where /proc/sys is read-only: posix_fadvise(DONTNEED) on every file
of the work directory, which drops only those files' page cache: cold on a local disk,
not on FUSE, where what the daemon reads from stays cached.
A daemon's own cache (memory or disk) is not touched by either; see daemon_cache.
"""

from __future__ import annotations

import os

DROP_CACHES = "/proc/sys/vm/drop_caches"
COLD_DROP = "cold: drop_caches"
COLD_FADVISE = "cold: fadvise"
# On FUSE, fadvise drops the FUSE file's page cache, not that of what the daemon reads from
# (bindfs over a local disk read at warm speed, 2.53 vs 2.41 GB/s): not cold.
FADVISE_FUSE = "not cold: fadvise on FUSE (the daemon's backing files stay cached; needs root)"
WARM = "warm"


def drop_caches(path: str = DROP_CACHES) -> bool:
    try:
        with open(path, "w", encoding="ascii") as f:
            f.write("3\n")
    except OSError:
        return False
    return True


def fadvise_tree(root: str) -> int:
    """Drop the page cache of every regular file under root; returns the file count."""
    count = 0
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            try:
                fd = os.open(os.path.join(dirpath, name), os.O_RDONLY | os.O_NOFOLLOW)
            except OSError:
                continue
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                count += 1
            finally:
                os.close(fd)
    return count


def make_cold(workdir: str, fuse: bool, drop_path: str = DROP_CACHES) -> str:
    """Sync, drop the page cache; returns which method was used, and whether it was enough."""
    os.sync()
    if drop_caches(drop_path):
        return COLD_DROP
    fadvise_tree(workdir)
    return FADVISE_FUSE if fuse else COLD_FADVISE
