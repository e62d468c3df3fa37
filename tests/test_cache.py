"""cold(): drop_caches as root, else posix_fadvise on the work dir's files."""

import ctypes
import mmap
import os

import pytest

from pytest_fsperf.measure import cache
from pytest_fsperf.vocab import ColdRead, DaemonCache, PageCache, StoreCache


def test_falls_back_to_fadvise_where_drop_caches_is_refused(tmp_path):
    for i in range(3):
        (tmp_path / f"f{i}").write_bytes(b"x" * 65536)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "g").write_bytes(b"y" * 4096)
    os.symlink("/etc/hostname", tmp_path / "link")  # not followed out of the work dir
    assert cache.fadvise_tree(str(tmp_path)) == 4
    assert cache.make_cold(str(tmp_path), False, drop_path=str(tmp_path / "no" / "such")) == PageCache.FADVISED


def resident_pages(path):
    """Pages of the file in the page cache, by mincore(2) on a shared mapping."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    size = os.path.getsize(path)
    pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        vec = (ctypes.c_ubyte * pages)()
        assert libc.mincore(ctypes.c_void_p(addr), ctypes.c_size_t(size), vec) == 0
        libc.munmap(ctypes.c_void_p(addr), ctypes.c_size_t(size))
    finally:
        os.close(fd)
    return sum(v & 1 for v in vec)


def test_fadvise_really_evicts(tmp_path):
    path = tmp_path / "data"
    path.write_bytes(os.urandom(4 * 2**20))
    path.read_bytes()
    assert resident_pages(path) > 0
    refused = str(tmp_path / "no" / "drop_caches")
    assert cache.make_cold(str(tmp_path), False, drop_path=refused) == PageCache.FADVISED
    assert resident_pages(path) == 0


@pytest.mark.integration
def test_fadvise_on_fuse_leaves_the_backing_file_cached_so_it_is_not_called_cold(bindfs):
    """Without root, fadvise through bindfs drops the FUSE pages; the backing file's stay,
    and a read would be served from them: the result must not say cold."""
    mount = bindfs()
    data = mount.point / "data"
    data.write_bytes(os.urandom(4 * 2**20))
    data.read_bytes()
    refused = str(mount.source / "no" / "drop_caches")
    state = cache.make_cold(str(mount.point), True, drop_path=refused)
    assert state == PageCache.FADVISED_FUSE and not state.startswith("cold")
    assert resident_pages(mount.source / "data") > 0  # why: the backing file is still cached


@pytest.mark.integration
def test_keeping_the_store_cache_drops_the_fuse_pages_and_keeps_the_backing_files(bindfs, tmp_path):
    """--fsperf-store-cache=keep: the backing file's pages stay (drop_caches is not written;
    the FUSE file's go by fadvise, and by the remount where the plugin mounts), and the result
    says so; on a kernel filesystem the drop happens as ever."""
    mount = bindfs()
    data = mount.point / "data"
    data.write_bytes(os.urandom(4 * 2**20))
    data.read_bytes()
    drop = tmp_path / "drop_caches"
    drop.write_text("")
    state = cache.make_cold(str(mount.point), True, drop_path=str(drop), store=StoreCache.KEEP)
    assert state == PageCache.STORE_KEPT and state.cold and state.startswith("cold: FUSE only")
    assert drop.read_text() == ""  # the machine's page cache was not dropped
    assert resident_pages(mount.source / "data") > 0  # the store's pages, kept
    local = tmp_path / "local"
    local.mkdir()
    assert cache.make_cold(str(local), False, drop_path=str(drop),
                           store=StoreCache.KEEP) == PageCache.DROPPED
    assert drop.read_text() == "3\n"


@pytest.mark.parametrize(("daemon", "read", "moved", "said"), [
    # issue 62: ossfs2 mounted by hand, seq_read_4t time-based over 2 GB of files its memory
    # did not hold before: 10.6 GB sent through FUSE, 2.2 GB read from the store
    (DaemonCache.UNKNOWN, 10_600_000_000, (2_200_000_000, 10_700_000_000), "read 2200.0 MB in all"),
    (DaemonCache.UNKNOWN, 2_000_000_000, (2_100_000_000, 2_050_000_000), ""),  # from the store
    # FUSE passthrough or splice: the daemon neither read nor sent it: not judged by this
    (DaemonCache.UNKNOWN, 2_000_000_000, (1_000_000, 1_000_000), ""),
    (DaemonCache.REMOUNTED, 10_600_000_000, (2_200_000_000, 10_700_000_000), ""),  # remounted
])
def test_a_daemon_that_sent_what_it_never_read_served_it_from_memory(daemon, read, moved, said):
    from pytest_fsperf.measure.cache import served_itself

    found = served_itself(PageCache.DROPPED, daemon, read, None, 10_000_000, 2_000_000_000, moved)
    assert (said in found) if said else found == ""


@pytest.mark.parametrize(("daemon", "read", "sent", "rss", "files", "said"), [
    # the plugin's own store counted: it sent far less than was read (ossfs2 seq_read_4t here:
    # 5.04 GB read, 223 MB from the store)
    (DaemonCache.REMOUNTED, 5_040_000_000, 223_000_000, None, None,
     "5040.0 MB read, the store sent 223.0 MB: the rest came from the daemon's own cache"),
    (DaemonCache.REMOUNTED, 512 << 20, 540_000_000, None, None, ""),  # all of it from the store
    # a mount the plugin did not start: 2.6 GB of daemon memory over 4 x 500 MB files read
    # over and over (the reported ossfs2 case) is not a cold read
    (DaemonCache.UNKNOWN, 36_900_000_000, None, 2_643_000_000, 2_000_000_000, "could hold the 2000.0 MB"),
    (DaemonCache.UNKNOWN, 2_000_000_000, None, 30_000_000, 2_000_000_000, ""),  # a small daemon
    (DaemonCache.UNKNOWN, 1 << 20, None, 1 << 30, None, ""),  # too small to judge
    (DaemonCache.NO_DAEMON, 1 << 30, None, None, None, ""),
])
def test_a_cold_read_served_from_the_daemons_own_cache_is_named(daemon, read, sent, rss, files, said):
    from pytest_fsperf.measure.cache import served_itself

    found = served_itself(PageCache.DROPPED, daemon, read, sent, rss, files)
    assert (said in found) if said else found == ""
    assert served_itself(PageCache.WARM, daemon, read, sent, rss, files) == ""  # not a cold read


def test_a_slow_read_of_an_idle_daemon_says_where_the_time_went():
    """Issue 55: ossfs2's small-file cold read at 8.4 MB/s, FUSE READ p99 4.3 s, the daemon at
    3% CPU (reproduced here through an OSS endpoint whose listen backlog dropped connections:
    1.50 MB/s, p99 4.36 s, 1%; MinIO's own p99 under 50 ms)."""
    from pytest_fsperf.measure.cache import waited_outside

    said = waited_outside(1.0, 4.36, 0.05)
    assert said.startswith("the daemon was idle (1% of a core) while a request waited up to 4.36 s")
    assert "the store answered within 0.05 s" in said and "between the daemon and the store" in said
    assert "to the store: it took up to 4" in waited_outside(1.0, 4.36, 4.0)
    assert "not known here" in waited_outside(3.0, 4.3, None)
    assert waited_outside(60.0, 4.3, None) == ""  # the daemon worked: its time is its own
    assert waited_outside(1.0, 0.02, None) == ""  # nothing slow


def test_with_no_daemon_the_block_device_says_whether_a_cold_read_was_cold(tmp_path):
    """Issue 62: sysbench's seqrd on a local ext4, 83 GB read in 5 s after drop_caches while
    the device read 27 MB: the page cache served it. A device that delivered the bytes: cold."""
    from pytest_fsperf.measure.cache import check_cold, device_read_bytes

    found, said = check_cold(PageCache.DROPPED, None, 83_059_000_000, None, 26_900_000)
    assert found == ColdRead.NOT_COLD and "device read 26.9 MB" in said
    assert check_cold(PageCache.DROPPED, None, 512 << 20, None, 540_000_000)[0] == ColdRead.VERIFIED
    assert check_cold(PageCache.DROPPED, None, 512 << 20, None, None)[0] == ColdRead.UNCHECKED
    assert check_cold(PageCache.WARM, None, 512 << 20, None, 0)[0] == ColdRead.UNCHECKED
    assert device_read_bytes("/proc") is None  # no block device behind it
