"""Regressions that shipped, rebuilt from their upstream sources and gated through the plugin.

    python3 -m benchmarks.shipped_regressions [--case gofuse-5076] [--repo juicefs=DIR]
                                              [--cache DIR] [--seconds 300]

Each case builds a daemon at its good and its bad version into a cache (once), mounts each
through the plugin's own backend over the plugin's own store, and runs a release gate of bad
against good and of good against itself: the outcome, the figure that decided, the pairs
and the time to the decision. It exits 1 unless every regression is caught and no A/A is
flagged. Needs root, fio, Go and the Go module proxy; the first build takes minutes.

gofuse-5076: the same go-fuse update in go-fuse's own loopback example (the juicedata fork at
the two versions JuiceFS's go.mod named, from the Go module proxy): its default write size
went from 64 KiB to 128 KiB - 16 FUSE writes per MiB against 8. It builds in seconds: CI runs
it (tests/test_shipped_regressions.py).

juicefs-5102 (juicedata/juicefs#5102, "Performance of master branch dropped by 20%?"): the
update to go-fuse 2.5.1 in d4779d9b4 (good: its parent b6582db4c) let 1 MiB FUSE writes
through where 128 KiB ones went before - 1 FUSE request per MiB written against 8, and
bandwidth that a 2-core runner cannot tell apart. With a clone that has the history (--repo
juicefs=DIR: `git clone https://github.com/juicedata/juicefs`), the two commits are built;
without one (CI), v1.2.0 from the Go module proxy is the good build and v1.2.0 with
d4779d9b4's diff (benchmarks/data/juicefs-d4779d9b4.diff) the bad one. Pinned for today's Go,
both sides alike: godeltaprof v0.1.8 (v0.1.6 links to a runtime symbol Go 1.23 removed).

gcsfuse-467 (GoogleCloudPlatform/gcsfuse#467, 20-30 GB of RSS on writes in 0.32/0.33, fixed in
0.34.1): a 256 MiB write and close; the daemon's peak memory. Both tags build from their own
vendor directories with today's Go; they are not in the Go module proxy, so the case needs a
clone (--repo gcsfuse=DIR). Neither has an endpoint flag: they speak to www.googleapis.com
only, so the gate runs over TLS (--fsperf-store-tls=on) and each reaches the plugin's
fake-gcs-server through the conditions' proxy as an HTTPS proxy (HTTPS_PROXY, a CONNECT
answered with the session CA's certificate for that name) and asks its token of the proxy
(--token-url; the store checks none).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", str(Path.home() / ".cache"))) / "fsperf-shipped"
PINS = ("github.com/grafana/pyroscope-go/godeltaprof@v0.1.8",)


@dataclass(frozen=True)
class Build:
    key: str  # its name in the cache and the table
    commit: str  # from a clone with history
    module: str  # else module@version from the Go module proxy
    diff: str = ""  # a file under benchmarks/data applied to the module's source
    # the module's hash as the go.sum of the project that used it records it: checked where
    # the checksum database has no entry for it (a fork's pseudo-version)
    sum: str = ""


@dataclass(frozen=True)
class Case:
    name: str
    reported: str
    repo: str  # the --repo key
    binary: str
    backend: str
    test: str  # the test file the gate runs
    figure: str  # the figure that must decide
    caught: tuple[str, ...]  # the outcomes that catch it
    good: Build
    bad: Build
    needs: str = ""  # why it cannot run without a clone ("" where it can)
    package: str = "."  # what `go build` builds in the source
    config: str = ""  # a backend config (--fsperf-backend-config) for a backend of its own
    options: tuple[str, ...] = ()  # more of the gate's command line


WRITE_64M = """
from pytest_fsperf import fsperf_mount

@fsperf_mount("juicefs")
def test_write(fsperf):
    fsperf.fio(name="write", rw="write", bs="1M", size="64M", end_fsync=1)
"""

WRITE_256M_CLOSED = """
from pytest_fsperf import fsperf_mount

@fsperf_mount("gcsfuse-legacy")
def test_write(fsperf):
    fsperf.fio(name="write", rw="write", bs="1M", size="256M")
"""

# gcsfuse before 0.36: no endpoint flag; www.googleapis.com through the proxy (HTTPS_PROXY)
GCSFUSE_LEGACY = """[backend gcsfuse-legacy]
binary = gcsfuse
store = gcs
command = gcsfuse --foreground --token-url={auth_url} {options} {bucket} {mountpoint}
requires = bucket auth_url connect_proxy
env.HTTPS_PROXY = {connect_proxy}
trust_env = SSL_CERT_FILE
"""
GCSFUSE = "github.com/googlecloudplatform/gcsfuse@"

JUICEFS_TAG = "github.com/juicedata/juicefs@v1.2.0"
GOFUSE = "github.com/juicedata/go-fuse/v2@"  # the fork JuiceFS builds with (go.mod's replace)
WRITE_GOFUSE = WRITE_64M.replace('"juicefs"', '"gofuse"')
LOOPBACK = """[backend gofuse]
binary = loopback
command = loopback -q {mountpoint} {source}
default.source = {private}/data
"""

CASES = (
    # the same update of go-fuse, in go-fuse's own example daemon: its default write size went
    # from 64 KiB to 128 KiB (16 FUSE writes per MiB against 8); built in seconds, so CI runs it
    Case("gofuse-5076", "juicedata/juicefs#5076's go-fuse update, in go-fuse's loopback example",
         "", "loopback", "gofuse", WRITE_GOFUSE, "fuse_per_mib", ("changed",),
         Build("7c40cb5eb3e9", "", GOFUSE + "v2.1.1-0.20240425033113-7c40cb5eb3e9",
               sum="h1:9oZoY+S86+VLhIohjC4Vx9MVdB/eYtqs0sWHylpc6jc="),  # b6582db4c's go.sum
         Build("d78c97ed7b7a", "", GOFUSE + "v2.1.1-0.20240809072820-d78c97ed7b7a",
               sum="h1:Rzopfv1+KpROzMWd6NVAs1wTjr5bc5ZdzIhIs0u5XBc="),  # d4779d9b4's go.sum
         package="./example/loopback", config=LOOPBACK),
    Case("juicefs-5102", "juicedata/juicefs#5102 (go-fuse 2.5.1: FUSE write size)", "juicefs",
         "juicefs", "juicefs", WRITE_64M, "fuse_per_mib", ("changed",),
         Build("b6582db4c", "b6582db4c0965839f4b6357e1d8a0d1d7e267193", JUICEFS_TAG),
         Build("d4779d9b4", "d4779d9b44918e6857f6f0e04066577883a8e601", JUICEFS_TAG,
               "juicefs-d4779d9b4.diff")),
    Case("gcsfuse-467", "GoogleCloudPlatform/gcsfuse#467 (RSS on writes)", "gcsfuse", "gcsfuse",
         "gcsfuse-legacy", WRITE_256M_CLOSED, "daemon_rss", ("B worse",),
         Build("v0.34.1", "v0.34.1", GCSFUSE + "v0.34.1"),
         Build("v0.33.0", "v0.33.0", GCSFUSE + "v0.33.0"),
         needs="not in the Go module proxy: needs a clone (--repo gcsfuse=DIR)",
         config=GCSFUSE_LEGACY, options=("--fsperf-store-tls=on",)),
)


def run(argv: list[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
        raise RuntimeError(f"{' '.join(argv[:3])}: exit {done.returncode}: {tail}")
    return done.stdout


def source(build: Build, repo: Path | None, into: Path) -> str:
    """The build's source in `into`; says which it is."""
    if repo is not None:
        archive = subprocess.run(["git", "-C", str(repo), "archive", build.commit],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
        return f"{build.commit[:9]} from {repo}"
    env = dict(os.environ)
    if build.sum:  # checked here against the project's go.sum, not the checksum database
        env["GONOSUMDB"] = build.module.split("@")[0]
    got = json.loads(run(["go", "mod", "download", "-json", build.module], env=env))
    if got.get("Error"):
        raise RuntimeError(f"{build.module}: {got['Error']}")
    if build.sum and got.get("Sum") != build.sum:
        raise RuntimeError(f"{build.module}: hash {got.get('Sum')} is not {build.sum}, the one "
                           "its project's go.sum records: not built")
    shutil.copytree(got["Dir"], into, dirs_exist_ok=True)
    for d, _dirs, files in os.walk(into):
        os.chmod(d, 0o755)
        for f in files:
            os.chmod(os.path.join(d, f), 0o644)
    said = f"{build.module} (Go module proxy)"
    if build.diff:
        run(["patch", "-p1", "-s", "-i", str(DATA / build.diff)], cwd=into)
        said += f" + {build.diff}"
    return said


def built(case: Case, build: Build, repo: Path | None, cache: Path) -> tuple[Path, str, float]:
    """The build's binary in the cache (made once), what it was built from, seconds spent."""
    tag = build.module.split("@")[1]
    where = cache / case.name / (build.key if repo is not None else f"{build.key}-from-{tag}")
    binary, note = where / case.binary, where / "built-from.txt"
    if binary.exists() and note.exists():
        return binary, note.read_text().strip(), 0.0
    t = time.monotonic()
    where.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="fsperf-shipped-") as tmp:
        src = Path(tmp) / "src"
        src.mkdir()
        said = source(build, repo, src)
        vendored = (src / "vendor" / "modules.txt").is_file()  # built from what it ships
        env = {**os.environ, "GOFLAGS": "-mod=vendor" if vendored else "-mod=mod",
               "CGO_ENABLED": "1"}
        for pin in PINS if case.backend == "juicefs" else ():
            run(["go", "mod", "edit", f"-require={pin}"], cwd=src, env=env)
        run(["go", "build", "-ldflags=-s -w", "-o", str(binary), case.package], cwd=src, env=env)
    version = run(["go", "version"]).strip()
    pins = f"; pinned {', '.join(PINS)}" if case.backend == "juicefs" else ""
    note.write_text(f"{said}{pins}; {version}\n")
    return binary, note.read_text().strip(), time.monotonic() - t


@dataclass(frozen=True)
class Gated:
    outcome: str
    decided_by: str
    pairs: int
    seconds: float
    ratio: float | None
    said: str


def gate(case: Case, reference: Path, candidate: Path, seconds: float) -> Gated:
    """A release gate of candidate against reference through the plugin (pytest in a scratch
    directory); its one comparison as the results file says it."""
    with tempfile.TemporaryDirectory(prefix="fsperf-shipped-gate-") as tmp:
        (Path(tmp) / "test_case.py").write_text(case.test)
        (Path(tmp) / "pytest.ini").write_text("[pytest]\n")
        out = Path(tmp) / "out.json"
        extra, env = [], dict(os.environ)
        if case.config:  # a backend of its own: its binary on PATH, as a user installs it
            (Path(tmp) / "fsperf.ini").write_text(case.config)
            (Path(tmp) / "bin").mkdir()
            shutil.copy(reference, Path(tmp) / "bin" / case.binary)
            extra = ["--fsperf-backend-config=fsperf.ini"]
            env["PATH"] = f"{tmp}/bin:{env.get('PATH', '')}"
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "test_case.py",
             f"--fsperf-backend={case.backend}", f"--fsperf-reference={reference}",
             f"--fsperf-candidate={candidate}", f"--fsperf-json={out}",
             f"--fsperf-ab-seconds={seconds:g}", *case.options, *extra], cwd=tmp, capture_output=True,
            text=True, check=False, env=env)
        if not out.exists():
            raise RuntimeError(f"{case.name}: no results: {done.stdout[-600:]}")
        doc = json.loads(out.read_text())
    (c,) = doc["comparisons"]
    m = c["metrics"].get(c["decided_by"]) or {}
    return Gated(str(m.get("outcome", "-")), c["decided_by"], c["rounds"], c["seconds"],
                 m.get("ratio"), c["stopped"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", action="append", help="run only these (default: all)")
    ap.add_argument("--repo", action="append", default=[], metavar="NAME=DIR",
                    help="a clone with history for a case's repository (juicefs=DIR, "
                         "gcsfuse=DIR)")
    ap.add_argument("--cache", type=Path, default=CACHE)
    ap.add_argument("--seconds", type=float, default=300.0, help="each gate's budget")
    a = ap.parse_args()
    repos = dict(r.split("=", 1) for r in a.repo)
    failed = False
    print(f"{'case':<14} {'gate':<22} {'outcome':<12} {'decided by':<16} {'B/A':>7} {'pairs':>5} "
          f"{'time':>6}  built from")
    for case in CASES:
        if a.case and case.name not in a.case:
            continue
        repo = Path(repos[case.repo]) if case.repo in repos else None
        if case.needs and repo is None:
            print(f"{case.name:<14} not run: {case.needs}")
            continue
        good, good_from, t_good = built(case, case.good, repo, a.cache)
        bad, bad_from, t_bad = built(case, case.bad, repo, a.cache)
        if t_good or t_bad:
            print(f"{case.name:<14} built in {t_good:.0f} s and {t_bad:.0f} s")
        for label, ref, cand, want in (("bad against good", good, bad, case.caught),
                                       ("good against good", good, good, ("same", "not worse"))):
            g = gate(case, ref, cand, a.seconds)
            ok = g.outcome in want and (label.startswith("good") or g.decided_by == case.figure)
            failed |= not ok
            ratio = f"{g.ratio:.3f}" if g.ratio is not None else "-"
            print(f"{case.name:<14} {label:<22} {g.outcome:<12} {g.decided_by:<16} {ratio:>7} "
                  f"{g.pairs:>5} {g.seconds:>5.0f}s  {cand_from(cand, good, good_from, bad_from)}"
                  + ("" if ok else "   <- NOT AS EXPECTED"))
    return 1 if failed else 0


def cand_from(cand: Path, good: Path, good_from: str, bad_from: str) -> str:
    return good_from if cand == good else bad_from


if __name__ == "__main__":
    sys.exit(main())
