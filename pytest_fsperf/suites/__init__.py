"""Runnable suites, one per source document:

    pytest --pyargs pytest_fsperf.suites.ossfs2 --fsperf-mount=/mnt/ossfs2 --fsperf-baseline=ossfs-2.0.4

Documented sizes are large (100 GB files, 100,000 small files): shrink them with
--fsperf-scale (e.g. 0.01). With --fsperf-baseline the report shows measured / documented
per scenario; --fsperf-gate=baseline turns a miss beyond the tolerance into a failure.
"""
