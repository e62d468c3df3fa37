"""Ceilings: the most the paths beside a filesystem move for the same work (the object store
read straight, FUSE with nothing behind it, tmpfs), to print each workload as a fraction.

store.py, fuse.py, cache.py (once per session and shape), machine.py (fsperf bench
--ceilings); a Ceiling itself is result data (result/ceiling.py)."""
