"""The Kubernetes binaries the test cluster runs, built from k8s.io/kubernetes at a pinned
version into the cache (~/.cache/fsperf-bin/k8s-VERSION), once. The standard library only:
.ci/run starts it before pip has installed anything.

    python3 -m tests.k8s.build [OUT]
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

VERSION = "v1.34.2"
BIN = Path(os.environ.get("FSPERF_K8S_BIN", Path.home() / ".cache" / "fsperf-bin" / f"k8s-{VERSION}"))
COMPONENTS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kubectl")


def _stamp() -> str:
    """The version the binaries say (as the release's own build stamps it)."""
    major, minor = VERSION.lstrip("v").split(".")[:2]
    return " ".join(f"-X {pkg}.{k}={v}" for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
                    for k, v in (("gitVersion", VERSION), ("gitMajor", major), ("gitMinor", minor),
                                 ("gitTreeState", "clean")))


def building(out: Path = BIN) -> Path:
    """The file a build in progress holds its PID in (CI starts one beside the tests)."""
    return out.with_name(out.name + ".building")


def wait(out: Path = BIN, timeout: float = 1800.0) -> None:
    """Until a build in progress ends, or `timeout`: while the PID its file names is a build
    (a file a killed build left names no build, whatever process has that PID by now)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            pid = int(building(out).read_text())
            if b"tests.k8s.build" not in Path(f"/proc/{pid}/cmdline").read_bytes():
                return
        except (OSError, ValueError):
            return
        time.sleep(5)


def build(out: Path = BIN) -> None:
    """go build of each component from k8s.io/kubernetes at VERSION, its staging modules
    replaced by their published versions (about 10 minutes of 2 cores, once: cached)."""
    if all((out / c).is_file() for c in COMPONENTS):
        return
    work = Path(tempfile.mkdtemp(prefix="fsperf-k8s-build-"))
    out.parent.mkdir(parents=True, exist_ok=True)
    building(out).write_text(str(os.getpid()))
    try:
        env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-mod=mod"}
        (work / "go.mod").write_text("module fsperf.local/k8s\n\ngo 1.24.0\n")
        found = json.loads(subprocess.run(["go", "mod", "download", "-json", f"k8s.io/kubernetes@{VERSION}"],
                                          cwd=work, env=env, check=True, capture_output=True).stdout)
        # its staging modules, which its own go.mod replaces by folders: by their published versions here
        staging = [line.split()[0] for line in Path(found["GoMod"]).read_text().splitlines()
                   if "=> ./staging/" in line]
        minor = VERSION.replace("v1.", "v0.", 1)
        with (work / "go.mod").open("a") as f:
            f.write("".join(f"replace {m} => {m} {minor}\n" for m in staging))
        (work / "tools.go").write_text("//go:build tools\n\npackage tools\n\nimport (\n" + "".join(
            f'\t_ "k8s.io/kubernetes/cmd/{c}"\n' for c in COMPONENTS) + ")\n")
        subprocess.run(["go", "get", f"k8s.io/kubernetes@{VERSION}"], cwd=work, env=env, check=True)
        subprocess.run(["go", "mod", "tidy"], cwd=work, env=env, check=True)
        out.mkdir(parents=True, exist_ok=True)
        for c in COMPONENTS:
            if (out / c).is_file():
                continue
            subprocess.run(["go", "build", "-trimpath", "-ldflags", f"-s -w {_stamp()}", "-o", str(out / f".{c}"),
                            f"k8s.io/kubernetes/cmd/{c}"], cwd=work, env=env, check=True)
            os.replace(out / f".{c}", out / c)  # whole or absent
    finally:
        shutil.rmtree(work, ignore_errors=True)
        building(out).unlink(missing_ok=True)


if __name__ == "__main__":
    build(Path(sys.argv[1]) if len(sys.argv) > 1 else BIN)
