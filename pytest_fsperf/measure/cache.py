"""Make the next read cold: flush dirty data, then drop the kernel page cache.

As root: `echo 3 > /proc/sys/vm/drop_caches` (page cache, dentries, inodes).
Otherwise, or where /proc/sys is read-only: posix_fadvise(DONTNEED) on every file
of the work directory, which drops only those files' page cache: cold on a local disk,
not on FUSE, where what the daemon reads from stays cached.
A daemon's own cache (memory or disk) is not touched by either; see daemon_cache.
"""

from __future__ import annotations

import enum
import os

from pytest_fsperf.vocab import Text

DROP_CACHES = "/proc/sys/vm/drop_caches"


class PageCache(Text):
    """The kernel page cache before a workload; the value is what results and reports say."""

    DROPPED = "cold: drop_caches"
    FADVISED = "cold: fadvise"
    # On FUSE, fadvise drops the FUSE file's page cache, not that of what the daemon reads from
    # (bindfs over a local disk read at warm speed, 2.53 vs 2.41 GB/s): not cold.
    FADVISED_FUSE = "not cold: fadvise on FUSE (the daemon's backing files stay cached; needs root)"
    # --fsperf-store-cache=keep: the FUSE files' pages dropped (and the daemon remounted,
    # where the plugin owns it), the machine's page cache not: what the daemon reads from (a
    # local backing directory, a local object store's disk) stays in memory, asked for
    STORE_KEPT = "cold: FUSE only, the store's cache kept (--fsperf-store-cache=keep)"
    # the same, by default, in a release gate between two builds of the daemon: the gate
    # compares the daemons; a local store's disk and the VM's memory are the same for both
    STORE_KEPT_GATE = ("cold: FUSE only, the store's cache kept (a gate between builds: "
                       "--fsperf-store-cache=auto)")
    WARM = "warm"

    @property
    def cold(self) -> bool:
        return self in (PageCache.DROPPED, PageCache.FADVISED, PageCache.STORE_KEPT,
                        PageCache.STORE_KEPT_GATE)

    @property
    def method(self) -> str:
        """As a cold step: drop_caches, fadvise."""
        return {PageCache.DROPPED: "drop_caches", PageCache.FADVISED: "fadvise",
                PageCache.FADVISED_FUSE: "fadvise (FUSE: not cold)",
                PageCache.STORE_KEPT: "fadvise (the store's cache kept)",
                PageCache.STORE_KEPT_GATE: "fadvise (the store's cache kept)"}.get(self, "warm")


class StoreCache(enum.Enum):
    """--fsperf-store-cache: what a cold start does to the page cache of what the daemon
    reads from."""

    DROP = "drop"  # drop_caches: the whole machine's page cache
    # only the FUSE files' pages: a local store's files stay in memory, so that every run
    # meets one state of it (a VM's virtual disk and free page reporting do not steady)
    KEEP = "keep"
    AUTO = "auto"  # the default: keep in a release gate between builds, drop otherwise


class ColdRead(Text):
    """Whether a cold read was served by the daemon, by what it sent through /dev/fuse."""

    UNCHECKED = "-"  # not a cold read, no daemon, or no counter to tell
    VERIFIED = "verified"  # the daemon sent at least 0.75x the bytes read
    NOT_COLD = "NOT cold"  # less: the rest came from the page cache


SERVED_SHARE = 0.75  # a cold read must have pulled at least this share of its bytes through the daemon
STORE_SHARE = 0.8  # ... and, where the store's bytes are counted, this share from the store
HOLDS_SHARE = 0.5  # a daemon not restarted whose memory holds this share of the bytes read: warm
SMALL_READ = 8 << 20  # below this, no judgement: headers, metadata and rounding dominate


def served_itself(cache: PageCache, daemon: DaemonCache, read_bytes: int,
                  store_sent: int | None, rss_before: int | None, file_set: int | None = None) -> str:
    """Why a read that started cold came from the daemon's own cache, or "": the store sent
    far less than was read (where its bytes are counted: the plugin's own store); or, on a
    mount the plugin did not start (no remount), the daemon's memory before the read could
    hold half the data read (file_set: the distinct bytes, where a job reads its files over
    and over). A drop_caches empties the kernel's cache, never a daemon's."""
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
    return ""


class DaemonCache(Text):
    """The FUSE daemon's own cache before a workload."""

    WIPED = "cold: remounted, disk cache wiped"
    REMOUNTED = "cold: remounted"  # a daemon with no disk cache to wipe
    KEPT = "not cold: remounted, but its disk cache was kept"  # a dir the user named (cold_steps)
    PAGE_ONLY = "kept: only the page cache was dropped"
    UNKNOWN = "unknown: existing mount, daemon not restarted"
    # a cold read the daemon served from its own memory or disk (the evidence in the notes)
    SERVED_ITSELF = "warm in the daemon: not a cold read"
    WARM = "warm"
    NO_DAEMON = "n/a: no daemon"

    @classmethod
    def of(cls, text: object) -> DaemonCache | None:
        """A daemon cache state as a report row carries it (a string)."""
        try:
            return cls(text)
        except ValueError:
            return None


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

