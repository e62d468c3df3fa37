"""A first suite: the ossfs 2.0 benchmark's sequential jobs (seed 001), as pytest tests.

Sizes are the published ones (100G); examples/pytest.ini sets fsperf_scale = 0.01 so a
run moves 1 GiB per job. Run on a real mount with
    pytest examples --fsperf-mount=/mnt/ossfs2
and raise the scale (--fsperf-scale=1) for the full-size jobs. The thresholds here are
floors any working filesystem clears; put your own release gates in their place.
"""

from pytest_fsperf import fsperf


@fsperf(min_bw="1MB/s")  # a floor any machine clears; set your mount's own
def test_seq_write_1_thread(fsperf):
    fsperf.fio(name="seq_write", rw="write", bs="1M", size="100G", numjobs=1, direct=1)


@fsperf(min_bw="1MB/s", max_p99="10s")  # floors any machine clears; set your own
def test_seq_read_1_thread(fsperf):
    fsperf.cold()  # page cache dropped; the file is laid out first, then dropped again
    fsperf.fio(name="seq_read", rw="read", bs="1M", size="100G", numjobs=1, direct=1)


@fsperf(min_bw="1MB/s")  # a floor any machine clears; set your mount's own
def test_seq_read_4_threads(fsperf):
    fsperf.cold()
    fsperf.fio(name="seq_read_4j", rw="read", bs="1M", size="100G", numjobs=4, direct=1,
               thread=True, time_based=True, runtime="10s")
