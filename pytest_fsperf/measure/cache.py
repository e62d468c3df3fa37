"""Make the next read cold: flush dirty data, then drop the kernel page cache.

As root: `echo 3 > /proc/sys/vm/drop_caches` (page cache, dentries, inodes).
Otherwise, or where /proc/sys is read-only: posix_fadvise(DONTNEED) on every file
of the work directory, which drops only those files' page cache: cold on a local disk,
not on FUSE, where what the daemon reads from stays cached.
A daemon's own cache (memory or disk) is not touched by either; see daemon_cache.
"""

from __future__ import annotations

import os

from pytest_fsperf.result.daemon import DaemonStats
from pytest_fsperf.result.fuse import FuseRequests
from pytest_fsperf.vocab import ColdRead, DaemonCache, PageCache, StoreCache

DROP_CACHES = "/proc/sys/vm/drop_caches"


SERVED_SHARE = 0.75  # a cold read must have pulled at least this share of its bytes through the daemon
STORE_SHARE = 0.8  # ... and, where the store's bytes are counted, this share from the store
HOLDS_SHARE = 0.5  # a daemon not restarted whose memory holds this share of the bytes read: warm
SMALL_READ = 8 << 20  # below this, no judgement: headers, metadata and rounding dominate


def served_itself(cache: PageCache, daemon: DaemonCache, read_bytes: int,
                  store_sent: int | None, rss_before: int | None, file_set: int | None = None,
                  moved: tuple[int | None, int | None] = (None, None)) -> str:
    """Why a read that started cold came from the daemon's own cache, or "": the store sent
    far less than was read (where its bytes are counted: the plugin's own store); or, on a
    mount the plugin did not start (no remount), the daemon's memory before the read could
    hold half the data read (file_set: the distinct bytes, where a job reads its files over
    and over); or the daemon's own syscalls (moved: its rchar and wchar over the window) show
    it sent the data through FUSE but read far less from anywhere (its store's sockets, its
    files). A drop_caches empties the kernel's cache, never a daemon's."""
    if not cache.cold or read_bytes < SMALL_READ or daemon == DaemonCache.NO_DAEMON:
        return ""
    mb = 1e6
    if store_sent is not None and store_sent < STORE_SHARE * read_bytes:
        return (f"{read_bytes / mb:.1f} MB read, the store sent {store_sent / mb:.1f} MB: the "
                "rest came from the daemon's own cache")
    data = min(read_bytes, file_set) if file_set else read_bytes
    if (daemon == DaemonCache.UNKNOWN and store_sent is None and rss_before is not None
            and rss_before >= HOLDS_SHARE * data):
        return (f"the daemon was not restarted (a mount the plugin did not start) and its memory "
                f"before the read, {rss_before / mb:.1f} MB, could hold the {data / mb:.1f} MB of "
                "files read; remount it yourself, or let the plugin mount it (--fsperf-backend)")
    took, sent = moved
    if (daemon == DaemonCache.UNKNOWN and store_sent is None and took is not None
            and sent is not None and sent >= STORE_SHARE * read_bytes
            and took < STORE_SHARE * read_bytes):
        return (f"the daemon was not restarted (a mount the plugin did not start), sent "
                f"{sent / mb:.1f} MB through FUSE for {read_bytes / mb:.1f} MB read but read "
                f"{took / mb:.1f} MB in all (its store's sockets, its files): the rest came from "
                "its own memory; remount it yourself, or let the plugin mount it (--fsperf-backend)")
    return ""


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


def make_cold(workdir: str, fuse: bool, drop_path: str = DROP_CACHES,
              store: StoreCache = StoreCache.DROP) -> PageCache:
    """Sync, drop the page cache; returns which method was used, and whether it was enough.
    StoreCache.KEEP on FUSE: only the FUSE files' pages (a filesystem of the kernel's own has
    no store behind it to keep: dropped as ever); AUTO is KEEP, said as a gate's default
    (the caller passes AUTO only in a release gate between builds)."""
    os.sync()
    if store in (StoreCache.KEEP, StoreCache.AUTO) and fuse:
        fadvise_tree(workdir)
        return PageCache.STORE_KEPT if store is StoreCache.KEEP else PageCache.STORE_KEPT_GATE
    if drop_caches(drop_path):
        return PageCache.DROPPED
    fadvise_tree(workdir)
    return PageCache.FADVISED_FUSE if fuse else PageCache.FADVISED


IDLE_CPU = 10.0  # % of a core: a daemon below this over a slow read did not do the waiting
SLOW_P99 = 0.5  # s: a read's p99 above this, with the daemon idle, waited outside it


def waited_outside(cpu_percent: float | None, p99_s: float | None,
                   store_p99_at_most: float | None) -> str:
    """Where the time of a slow read went when the daemon was idle, or "": not in the daemon;
    in the store's service where its own p99 says so, else between the daemon and the store."""
    if cpu_percent is None or p99_s is None or cpu_percent >= IDLE_CPU or p99_s < SLOW_P99:
        return ""
    said = (f"the daemon was idle ({cpu_percent:.0f}% of a core) while a request waited up to "
            f"{p99_s:.2f} s (p99): the time went outside it")
    if store_p99_at_most is None:
        return said + ", to its store or the way there (the store's own timings are not known here)"
    if store_p99_at_most >= p99_s / 2:
        return said + f", to the store: it took up to {store_p99_at_most:g} s to answer (p99, its count)"
    return (said + f"; the store answered within {store_p99_at_most:g} s (p99, its count): the wait "
            "was between the daemon and the store (its connections or their queue), not the "
            "store's service")


def device_read_bytes(path: str) -> int | None:
    """Bytes read so far from the block device holding path (its /sys stat), or None where
    it has none (tmpfs, FUSE, overlay, btrfs's anonymous devices)."""
    try:
        dev = os.stat(path).st_dev
        with open(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}/stat", encoding="ascii") as f:
            return int(f.read().split()[2]) * 512  # sectors read
    except (OSError, ValueError, IndexError):
        return None


def check_cold(cache: PageCache, daemon: DaemonStats | None, read_bytes: int,
               fuse: FuseRequests | None = None, device: int | None = None) -> tuple[ColdRead, str]:
    """A read that started cold must have been served by the daemon: what the kernel took from
    its page cache never reaches it. Where the FUSE requests were traced, the data its READ
    replies carried tells exactly how much it served; else its written bytes (wchar) over the
    window, which carry those replies (and whatever else it wrote). With no daemon, the
    filesystem's block device: what it read over the window (device; any other reader of
    the device only adds to it)."""
    if not cache.cold or read_bytes <= 0:
        return ColdRead.UNCHECKED, ""
    read = fuse.op("READ") if fuse is not None else None
    if fuse is not None:
        served = read.bytes if read is not None else 0
        said = (f"the daemon's FUSE READ replies carried {served / 1e6:.1f} MB for "
                f"{read_bytes / 1e6:.1f} MB read")
    elif daemon is not None and daemon.write_bytes is not None:
        served = daemon.write_bytes
        said = (f"the daemon sent {served / 1e6:.1f} MB through FUSE for {read_bytes / 1e6:.1f} "
                "MB read")
    elif daemon is None and device is not None:
        served = device
        said = (f"the filesystem's device read {served / 1e6:.1f} MB for {read_bytes / 1e6:.1f} "
                "MB read")
    else:
        return ColdRead.UNCHECKED, ""
    if served < SERVED_SHARE * read_bytes:
        return ColdRead.NOT_COLD, said + "; the rest came from the page cache"
    return ColdRead.VERIFIED, said
