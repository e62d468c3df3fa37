"""ossfs 1.91+ features (document 002): sysbench fileio, ls / find, concurrent large reads.

Compare two mount options of your ossfs 1.x mount by running this twice, e.g.
    pytest examples/test_ossfs1_features.py --fsperf-mount=/mnt/ossfs --fsperf-save-baseline=before
    (remount with -o readdir_optimize)
    pytest examples/test_ossfs1_features.py --fsperf-mount=/mnt/ossfs --fsperf-baseline=before
"""

import pytest

from pytest_fsperf import fsperf


@pytest.mark.parametrize("mode", ["seqwr", "rndrw"])
@fsperf(min_bw="1MB/s")
def test_sysbench_fileio(fsperf, mode):
    # 128 files, 16 KiB blocks, 2 threads (fio jobs standing in for sysbench fileio)
    fsperf.scenario(f"sysbench_{mode}")


def test_sysbench_seqrd(fsperf):
    # sysbench reads its files over and over until its time is up: after the first pass the
    # page cache serves them, and the row says so (`NOT cold: page cache served it`, from
    # what the mount's device or daemon really read). No floor is judged on such a figure.
    r = fsperf.scenario("sysbench_seqrd")
    assert r.ops is not None and r.ops.per_second > 0


@pytest.mark.parametrize("scenario", ["ls_1k", "find_1k"])
def test_listing(fsperf, scenario):
    # cold: dentries and page cache dropped first. Entries/s depend on this machine; for your
    # mount, add a floor such as @fsperf(min_ops="1000/s").
    r = fsperf.scenario(scenario)
    assert r.ops is not None and r.ops.per_second > 0


def test_ten_concurrent_large_reads(fsperf):
    r = fsperf.scenario("direct_read_10x10g")  # elapsed time is what the document compares
    print(f"10 x 10 GB read in {r.wall_seconds:.1f} s, daemon peak memory "
          f"{r.daemon.peak_rss_bytes / 1e6:.0f} MB" if r.daemon else r.daemon_note)
