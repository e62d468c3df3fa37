"""The plugin's own Go programs (the conditions' proxy, the packet delayer): built once per
source with the machine's Go into a private cache. Root runs them: Go is resolved and checked
like any program root runs, and builds with no setting of the caller's (GOFLAGS could name a
-toolexec), no network and no toolchain download."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from importlib import resources

from pytest_fsperf.infra import buildcache, trust

CACHE = os.path.join(os.path.expanduser("~"), ".cache", "pytest-fsperf", "proxy")
GO = ("/usr/local/go/bin/go", "/usr/lib/go/bin/go", "/usr/bin/go")


def built(package: str, name: str, sources: tuple[str, ...], what: str) -> tuple[str | None, str]:
    """The program of pytest_fsperf/store/`package` (its `sources`), built if need be into
    CACHE as `name`-<hash of the sources>: its path, or None and why not."""
    found = next((g for g in (*GO, shutil.which("go") or "") if g and os.access(g, os.X_OK)), None)
    if found is None:
        return None, f"no Go toolchain (>= 1.22) to build {what}"
    go_argv, why = trust.program(found)
    if why:
        return None, f"Go is not run as root: {why}"
    files = source(package, sources)
    digest = hashlib.sha256(b"".join(files[n] for n in sources)).hexdigest()[:16]
    try:
        return buildcache.built(CACHE, f"{name}-{digest}",
                                lambda cache, path: _build(go_argv, files, name, cache, path), what)
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"{what} could not be built: {str(exc)[-300:]}"


def source(package: str, names: tuple[str, ...]) -> dict[str, bytes]:
    """The files of pytest_fsperf/store/`package`, as the installed package ships them."""
    place = resources.files("pytest_fsperf.store").joinpath(package)
    return {n: place.joinpath(n).read_bytes() for n in names}


def _build(go: list[str], files: Mapping[str, bytes], name: str, cache: str, path: str) -> None:
    with tempfile.TemporaryDirectory(dir=cache) as work:
        for file, text in files.items():
            with open(os.path.join(work, file), "wb") as f:
                f.write(text)
        env = {"PATH": f"{os.path.dirname(go[0])}:/usr/bin:/bin", "HOME": work, "LC_ALL": "C",
               "GOCACHE": os.path.join(cache, "gocache"), "GOPATH": os.path.join(work, "gopath"),
               "GOFLAGS": "-mod=mod", "GOTOOLCHAIN": "local", "GOPROXY": "off",
               "CGO_ENABLED": "0", "GOENV": "off", "GOWORK": "off"}
        done = subprocess.run([*go, "build", "-trimpath", "-o", name, "."], cwd=work, env=env,
                              capture_output=True, text=True, timeout=600, check=False)
        if done.returncode != 0:
            raise OSError(f"go build failed: {done.stderr.strip()[-300:]}")
        out = os.path.join(work, name)
        os.chmod(out, 0o700)
        os.replace(out, path)
