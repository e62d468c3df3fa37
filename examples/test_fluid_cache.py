"""A dataset cache in front of object storage (document 003): first read, read after a
warm-up pass, steady read. The accelerated figures are several times the cold one.

    pytest examples/test_fluid_cache.py --fsperf-mount=/mnt/dataset --fsperf-baseline=fluid-zos-mem-cloud
"""

from pytest_fsperf import fsperf


@fsperf(min_bw="1MB/s")  # a floor any machine clears; set your mount's own
def test_cold_first_read(fsperf):
    fsperf.scenario("fluid_cold_read")  # fio 8 jobs, 1 MiB, iodepth 4, one 15 GB file


@fsperf(min_bw="1MB/s")  # a floor any machine clears; set your mount's own
def test_first_read_after_warm_up(fsperf):
    fsperf.scenario("fluid_warmed_read")  # page cache dropped, the daemon's cache kept


@fsperf(min_bw="1MB/s")  # a floor any machine clears; set your mount's own
def test_steady_read(fsperf):
    fsperf.scenario("fluid_steady_read")
