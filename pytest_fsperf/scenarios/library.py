"""The scenario library: the documents' workloads at their published sizes.

Each scenario is a list of steps; every step but the last is preparation (run, not
judged). --fsperf-scale shrinks sizes and file counts as for any workload.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from pytest_fsperf.errors import UsageError


@dataclass(frozen=True)
class Step:
    engine: str  # "fio", "files", "meta", "cold" (remount + page cache), "drop" (page cache only)
    params: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class Scenario:
    id: str
    source: str  # the seed document
    title: str
    steps: tuple[Step, ...]
    # each run in files of its own, removed after it (juicefs bench writes into a new
    # directory every time): a rewrite of last run's files is another workload
    fresh: bool = False
    command: str = ""  # the source document's own command(s) for it, as printed there
    # why it cannot run on one machine ("" where it can): its figures ship for reference
    unavailable: str = ""
    # how this scenario differs from the document's protocol; "" where it reproduces it
    # (a scenario of our own, ASKED, differs by being ours)
    differs: str = ""

    @property
    def fidelity(self) -> str:
        """'reproduces the document', or 'differs: ...', or 'ours: ...'."""
        if self.source == ASKED:
            return "ours: not in the documents"
        if self.unavailable:
            return f"not measurable here: {self.unavailable}"
        return f"differs: {self.differs}" if self.differs else "reproduces the document"


def fio(**params: object) -> Step:
    return Step("fio", params)


def files(**params: object) -> Step:
    return Step("files", params)


def meta(**params: object) -> Step:
    return Step("meta", params)


def sysbench(mode: str) -> Step:
    return Step("sysbench", {"mode": mode, **SYSBENCH})


COLD, DROP = Step("cold"), Step("drop")
SEQ_1M = {"bs": "1M", "direct": 1}
# documents 000, 001 and 004 run fio with --ioengine=libaio; 002 and 003 give none (psync)
LIBAIO = {"ioengine": "libaio"}
OSSFS2 = "000 (ossfs 2.0.0beta / 1.91.4) and 001 (ossfs 2.0.4 / 1.91.8 / goofys 0.24.0)"
OSSFS1 = "002 (ossfs 1.88.x vs 1.91+, sysbench fileio, ls/find, direct_read)"
FLUID = "003 (Fluid dataset cache over object storage and HPFS)"
JFS = "004 (JuiceFS performance evaluation guide)"
ASKED = "asked by users, not in the documents: sizes of our own"
# sysbench fileio of 002: 128 files, 16 KiB blocks, 2 threads, 120 s, 1G in all, no fsync.
# Where sysbench is not installed, fio runs the same shape (SYSBENCH_FIO).
SYSBENCH = {"files": 128, "block": "16KiB", "total": "1GiB", "threads": 2, "seconds": 120}
SYSBENCH_FIO = {"bs": "16k", "nrfiles": 128, "filesize": "8M", "size": "1G", "numjobs": 2,
                "thread": 1, "time_based": 1, "runtime": "120s", "file_service_type": "random"}
FIO_MODE: dict[str, dict[str, object]] = {"seqwr": {"rw": "write"}, "seqrd": {"rw": "read"},
            "rndrw": {"rw": "randrw", "rwmixread": 60}}
JFS_FIO = {**LIBAIO, "bs": "1m", "size": "1g", "numjobs": 4, "direct": 1}
# The document's read command has no --group_reporting: its "X-Y MB/s" is fio's min-max of
# the 8 jobs' own bandwidths, so the jobs are reported apart here too (per_job).
FLUID_READ = {"rw": "read", "filename": "file1", "bs": "1M", "size": "15G", "numjobs": 8,
              "iodepth": 4, "direct": 1, "per_job": True}

_ALL = [
    Scenario("seq_write_1t", OSSFS2, "1 thread sequential write of 100 GB, 1 MiB, direct",
             (fio(rw="write", size="100G", numjobs=1, **SEQ_1M, **LIBAIO),)),
    Scenario("seq_read_1t", OSSFS2, "1 thread sequential read of 100 GB after a cold start",
             (COLD, fio(rw="read", size="100G", numjobs=1, **SEQ_1M, **LIBAIO))),
    Scenario("seq_read_4t", OSSFS2, "4 threads each reading its own 100 GB file for 30 s",
             (COLD, fio(rw="read", size="100G", numjobs=4, nrfiles=1, thread=1, time_based=1,
                        runtime="30s", **SEQ_1M, **LIBAIO))),
    Scenario("ttfb_1k_cold", ASKED, "time to first byte: 16 threads open 1,000 files of 1 MiB "
             "and read 1 byte, then the rest, after a cold start (p50/p99: max_ttfb)",
             (files(mode="write", count=1000, size="1MiB", threads=16, subdir="ttfb"), COLD,
              files(mode="read", count=1000, size="1MiB", threads=16, subdir="ttfb", first="1B"))),
    Scenario("ml_epoch_shuffled", ASKED, "a dataloader's epoch: 8 threads read 10,000 files of "
             "128 KiB whole, in shuffled order, after a cold start",
             (files(mode="write", count=10_000, size="128KiB", threads=16, subdir="dataset"), COLD,
              files(mode="read", count=10_000, size="128KiB", threads=8, subdir="dataset",
                    order="shuffled"))),
    Scenario("ml_shard_random_chunks", ASKED, "sharded datasets and weights loaded by offset: 4 "
             "jobs read 4 MiB chunks at random offsets of 4 files of 2 GiB, cold, direct",
             (COLD, fio(rw="randread", bs="4M", size="8G", nrfiles=4, numjobs=4, direct=1,
                        file_service_type="random"))),
    Scenario("checkpoint_save", ASKED, "save a sharded checkpoint durably: 8 shards of 1 GiB by "
             "8 threads (temporary name, 8 MiB writes, fsync, close, rename, directory fsync)",
             (Step("checkpoint", {"mode": "save", "shards": 8, "size": "1GiB", "threads": 8}),)),
    Scenario("checkpoint_restore", ASKED, "restore that checkpoint after a cold start: its 8 "
             "shards read back whole by 8 threads",
             (Step("checkpoint", {"mode": "save", "shards": 8, "size": "1GiB", "threads": 8}), COLD,
              Step("checkpoint", {"mode": "restore", "shards": 8, "size": "1GiB", "threads": 8}))),
    Scenario("smallfile_write_128t", OSSFS2, "128 threads write 100,000 files of 128 KiB",
             (files(mode="write", count=100_000, size="128KiB", threads=128),)),
    Scenario("smallfile_read_128t", OSSFS2, "128 threads read 100,000 files of 128 KiB, cold",
             (files(mode="write", count=100_000, size="128KiB", threads=128), COLD,
              files(mode="read", count=100_000, size="128KiB", threads=128))),
    Scenario("sysbench_seqwr", OSSFS1, "sysbench fileio seqwr: 128 files, 16 KiB, 2 threads",
             (sysbench("seqwr"),)),
    Scenario("sysbench_seqrd", OSSFS1, "sysbench fileio seqrd: 128 files, 16 KiB, 2 threads",
             (COLD, sysbench("seqrd"))),
    Scenario("sysbench_rndrw", OSSFS1, "sysbench fileio rndrw (60% reads): 128 files, 16 KiB",
             (COLD, sysbench("rndrw"))),
    Scenario("direct_read_10x10g", OSSFS1, "10 concurrent sequential reads of 10 GB files",
             (COLD, fio(rw="read", size="10G", numjobs=10, thread=1, **SEQ_1M))),
]
for n, label in ((1000, "1k"), (10_000, "10k"), (100_000, "100k")):
    _ALL += [
        Scenario(f"ls_{label}", OSSFS1, f"ls -l of a directory of {n:,} files, cold",
                 (COLD, meta(op="list_stat", entries=n))),
        Scenario(f"ls_names_{label}", OSSFS1, f"ls -f (names only) of {n:,} files, cold",
                 (COLD, meta(op="list", entries=n))),
        Scenario(f"find_{label}", OSSFS1, f"find over {n:,} files" +
                 (", cold" if n == 1000 else " in directories of 100, cold"),
                 (COLD, meta(op="walk", entries=n, per_dir=0 if n == 1000 else 100))),
    ]
_ALL += [
    Scenario("fluid_cold_read", FLUID, "8 jobs, iodepth 4, read one 15 GB file: first read, cold",
             (fio(rw="write", filename="file1", bs="1M", size="15G", direct=1), COLD,
              fio(**FLUID_READ))),
    Scenario("fluid_warmed_read", FLUID, "first read after a warm-up pass (page cache dropped, "
             "the daemon's cache kept)",
             (fio(rw="write", filename="file1", bs="1M", size="15G", direct=1), COLD,
              fio(**FLUID_READ), DROP, fio(**FLUID_READ))),
    Scenario("fluid_steady_read", FLUID, "repeated read, nothing dropped",
             (fio(rw="write", filename="file1", bs="1M", size="15G", direct=1),
              fio(**FLUID_READ), fio(**FLUID_READ))),
    Scenario("fluid_cross_node_read", FLUID, "8 jobs read one 15 GB file through a Fluid cache "
             "held on another node (the reader placed by nodeSelector)", (),
             unavailable="the reader must run on another node than the cache; one machine "
                         "cannot measure it (its figures ship for reference)"),
    Scenario("jfs_bench_big_write", JFS, "juicefs bench: each thread writes one 1 GiB file, 1 MiB",
             (files(mode="write", count=1, size="1GiB", threads=1, subdir="big"),), fresh=True),
    Scenario("jfs_bench_big_read", JFS, "juicefs bench: each thread reads its 1 GiB file, cold",
             (files(mode="write", count=1, size="1GiB", threads=1, subdir="big"), DROP,
              files(mode="read", count=1, size="1GiB", threads=1, subdir="big")), fresh=True),
    Scenario("jfs_bench_small_write", JFS, "juicefs bench: each thread writes 100 files of 128 KiB",
             (files(mode="write", count=100, size="128KiB", threads=1, subdir="small"),), fresh=True),
    Scenario("jfs_bench_small_read", JFS, "juicefs bench: each thread reads its 100 small files",
             (files(mode="write", count=100, size="128KiB", threads=1, subdir="small"), DROP,
              files(mode="read", count=100, size="128KiB", threads=1, subdir="small")), fresh=True),
    Scenario("jfs_bench_stat", JFS, "juicefs bench: stat of 100 files per thread",
             (DROP, meta(op="stat", entries=100))),
    Scenario("jfs_fio_seq_write", JFS, "fio: 4 jobs x 1 GiB sequential write, 1 MiB, direct",
             (fio(rw="write", **JFS_FIO),)),
    Scenario("jfs_fio_seq_read", JFS, "fio: 4 jobs x 1 GiB sequential read, 1 MiB, direct, of "
             "the files the write just left (the document's sequence: no cold start)",
             (fio(rw="write", **JFS_FIO), fio(rw="read", **JFS_FIO))),
    Scenario("jfs_fio_rand_write", JFS, "fio: 4 jobs x 1 GiB random write, 1 MiB, direct",
             (fio(rw="randwrite", **JFS_FIO),)),
    Scenario("jfs_fio_rand_read", JFS, "fio: 4 jobs x 1 GiB random read, 1 MiB, direct, of "
             "the files the random write just left (the document's sequence: no cold start)",
             (fio(rw="randwrite", **JFS_FIO), fio(rw="randread", **JFS_FIO))),
]

_OSS_WRITE = ("fio --name=file-100G --ioengine=libaio --rw=write --bs=1M --size=100G "
              "--numjobs=1 --direct=1 --directory=/mnt/oss/fio_direct_write --group_reporting")
_OSS_4T = ("fio --name=file-100g --ioengine=libaio --direct=1 --iodepth=1 --numjobs=4 --nrfiles=1 "
           "--rw={rw} --bs=1M --size=100G --group_reporting --thread --directory=/mnt/oss/fio")
_RW_BENCH = ("./rw-bench --dir DIR --file-size-KB 128 --file-count 100000 --write; "
             "echo 1 > /proc/sys/vm/drop_caches; ./rw-bench --dir DIR --threads 128 "
             "(5 runs back to back, the steady one reported)")
_FLUID = ("fio --name=seqread-single --filename=file1 --rw=read --bs=1M --size=15G --numjobs=8 "
          "--iodepth=4 --direct=1")
_JFS = ("fio --name=jfs-test --directory=/mnt/jfs --ioengine=libaio --rw={rw} --bs=1m --size=1g "
        "--numjobs=4 --direct=1 --group_reporting")
_SYSBENCH = "sysbench fileio (128 files, 16 KiB blocks; the document gives no command line)"
COMMANDS = {
    "seq_write_1t": _OSS_WRITE,
    "seq_read_1t": "echo 1 > /proc/sys/vm/drop_caches; fio --name=file-100G --ioengine=libaio "
                   "--direct=1 --rw=read --bs=1M --directory=/mnt/oss/fio_direct_write "
                   "--group_reporting --numjobs=1",
    "seq_read_4t": (_OSS_4T.format(rw="write") + "; echo 1 > /proc/sys/vm/drop_caches; "
                    + _OSS_4T.format(rw="read") + " --time_based --runtime=30"),
    "smallfile_read_128t": _RW_BENCH,
    "smallfile_write_128t": "./rw-bench --dir DIR --file-size-KB 128 --file-count 100000 --write",
    "fluid_cold_read": _FLUID, "fluid_warmed_read": _FLUID, "fluid_steady_read": _FLUID,
    "fluid_cross_node_read": _FLUID,
    **{f"jfs_fio_{k}": _JFS.format(rw=rw) for k, rw in (
        ("seq_write", "write"), ("seq_read", "read"), ("rand_write", "randwrite"),
        ("rand_read", "randread"))},
    **{f"jfs_bench_{k}": "juicefs bench /mnt/jfs -p N" for k in (
        "big_write", "big_read", "small_write", "small_read", "stat")},
    **{f"sysbench_{m}": _SYSBENCH for m in ("seqwr", "seqrd", "rndrw")},
}
DIFFERS = {
    "smallfile_read_128t": "the page cache is dropped and the mount restarted before every "
                           "round; the document drops caches once, runs 5 times back to back "
                           "and reports the steady run",
    "smallfile_write_128t": "the document published no write figure; its program defaults to 8 "
                            "threads and its write command gives none: 128 threads are ours",
    "direct_read_10x10g": "fio direct I/O here; the document's figures came from sysbench or "
                          "scripts of its own",
    **{f"sysbench_{m}": "without sysbench installed, a fio job of the same shape runs, which "
                        "interleaves the files in the sequential modes and skips the final fsync"
       for m in ("seqwr", "seqrd", "rndrw")},
}
for _n, _label in ((1000, "1k"), (10_000, "10k"), (100_000, "100k")):
    DIFFERS[f"ls_{_label}"] = ("the document says `ls` of 1,000 files without its flags: `ls -l` "
                               "(readdir + lstat of each) here"
                               + ("" if _n == 1000 else f"; {_n:,} files are ours"))
    DIFFERS[f"ls_names_{_label}"] = ("the document says `ls` of 1,000 files without its flags: "
                                     "`ls -f` (names only) here"
                                     + ("" if _n == 1000 else f"; {_n:,} files are ours"))
    if _n != 1000:
        DIFFERS[f"find_{_label}"] = (f"the document runs `find` over 1,000 files; {_n:,} files in "
                                     "directories of 100 are ours")

SCENARIOS: dict[str, Scenario] = {
    s.id: replace(s, command=COMMANDS.get(s.id, ""), differs=DIFFERS.get(s.id, ""))
    for s in _ALL}


def get(scenario_id: str, where: str) -> Scenario:
    try:
        return SCENARIOS[scenario_id]
    except KeyError:
        raise UsageError(f"{where}: unknown scenario {scenario_id!r} "
                         f"(known: {', '.join(sorted(SCENARIOS))})") from None
