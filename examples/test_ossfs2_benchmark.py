"""The ossfs 2.0 benchmark (documents 000 and 001) as tests you can copy and edit.

    pytest examples/test_ossfs2_benchmark.py --fsperf-mount=/mnt/ossfs2 --fsperf-baseline=ossfs-2.0.4

examples/pytest.ini shrinks every size and file count to 1% (fsperf_scale = 0.01); raise it
for the documented sizes. The report shows measured / documented for each scenario of the
baseline. --fsperf-gate=baseline fails a miss of more than 10% only at the document's own
size (fsperf_scale = 1): at 0.01 the comparison is labelled and not judged.
"""

from pytest_fsperf import fsperf


@fsperf(min_bw="1MB/s")  # a floor any machine clears; set your mount's own
def test_seq_write(fsperf):
    fsperf.scenario("seq_write_1t")  # fio: rw=write bs=1M size=100G numjobs=1 direct=1


@fsperf(min_bw="1MB/s")  # a floor any machine clears; set your mount's own
def test_seq_read(fsperf):
    fsperf.scenario("seq_read_1t")  # the same, read, after a cold start


@fsperf(min_bw="1MB/s")  # a floor any machine clears; set your mount's own
def test_small_files_128_threads(fsperf):
    # The document's Go program, in-process: 128 threads, 100,000 files of 128 KiB each,
    # MB/s = bytes / 10^6 / seconds; also open, first-byte, whole-file and close latency.
    fsperf.files(mode="write", count=100_000, size="128KiB", threads=128, judged=False)
    fsperf.cold()
    r = fsperf.files(mode="read", count=100_000, size="128KiB", threads=128)
    assert r.ops.phases["close"].p99_ns < r.ops.phases["full"].max_ns + 10**9
