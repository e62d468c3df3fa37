"""Mount-option checks: the plugin mounts s3fs and rclone itself, over a MinIO server it starts
on 127.0.0.1 (fixture fsperf_s3), and compares option sets. Needs s3fs, rclone and MinIO
(tests skip with the install command otherwise). Against your own bucket, give
--fsperf-backend-config=FILE with an [fsperf] section: endpoint, bucket, access_key, secret_key.
"""

import pytest

from pytest_fsperf import fsperf, fsperf_mount, mount_params

PARALLEL_UPLOAD = ["-o", "parallel_count=1", "-o", "multipart_size=5"]


# One test per option set, with ids "defaults" and "parallel_count=1,multipart_size=5".
# end_fsync=1: the upload happens at close; without it fio times only s3fs's local buffer.
@pytest.mark.parametrize("options", mount_params("s3fs", [], PARALLEL_UPLOAD))
@fsperf(min_bw="1MB/s")  # a floor any machine clears; set your mount's own
def test_s3fs_flushed_write(fsperf, options):
    fsperf.fio(name="write", rw="write", bs="1M", size="4G", direct=1, end_fsync=1)


@fsperf_mount("s3fs", options=["-o", "use_cache={private}/cache"])
def test_s3fs_cold_read_after_remount(fsperf):
    fsperf.fio(name="write", rw="write", bs="1M", size="4G", direct=1, end_fsync=1, judged=False)
    warm = fsperf.fio(name="warm_read", rw="read", bs="1M", size="4G", direct=1)
    fsperf.cold()  # unmount, wipe s3fs's use_cache dir, mount, drop the page cache
    cold = fsperf.fio(name="cold_read", rw="read", bs="1M", size="4G", direct=1)
    assert cold.daemon_cache == "cold: remounted, disk cache wiped"
    assert warm.daemon_cache == "warm"


@fsperf_mount("rclone", config="fsperf_s3")
def test_rclone_bwlimit_costs_bandwidth(fsperf):
    # time-based: a read too small to outlast rclone's burst allowance would not show the limit
    ab = fsperf.compare(dict(rw="read", bs="1M", size="4G", direct=1, time_based=1, runtime="2s"),
                        a=[], b=["--bwlimit", "20M"], rounds=2, max_rounds=4)
    assert ab.ratio("bw") < 1.0  # B (throttled) is slower than A
