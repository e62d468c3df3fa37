"""A regression only a real store shows: ossfs2 with its prefetch cut from 64 requests in
flight a file to 4.

On the plugin's bare store (loopback, no latency, no limit a connection) one read stream is as
fast either way: the machine, not the store, sets the pace, and the gate passes. A real store
moves about 50 MB/s a connection, so a reader is as fast as the requests it keeps in flight;
under the in-region profile the cut build reads at a third of the speed and the gate fails it:

    pytest examples/test_store_latency.py                                   # passes
    pytest examples/test_store_latency.py --fsperf-store-profile=in-region  # fails: B worse

The plugin mounts ossfs2 itself over its own MinIO and OSS gateway (skipped without ossfs2).
"""

from pytest_fsperf import fsperf_mount
from pytest_fsperf.vocab import Difference

READ = dict(rw="read", bs="1M", size="100G", direct=1)  # the published 1-thread read, scaled


@fsperf_mount("ossfs2")
def test_ossfs2_prefetch_cut_is_not_slower(fsperf):
    # a fifth either way is "the same" here: short reads on a small runner vary by a tenth
    ab = fsperf.compare(READ, a=["--prefetch_concurrency_per_file=64"],
                        b=["--prefetch_concurrency_per_file=4"], rounds=3, max_rounds=6,
                        tolerance="20%")
    assert ab.outcome is not Difference.B_WORSE, ab.what_happened()
