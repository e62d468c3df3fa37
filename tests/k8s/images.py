"""The cluster's images, made here (no registry is reachable): OCI archives written from the
machine's own files, imported into containerd. The pause image is a static C program; the
tools image holds what a client pod runs (a shell, fio, Python) by mounting the node's own
/usr read-only rather than copying it (a test cluster's pods run the node's binaries)."""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import tarfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PAUSE = "fsperf.local/pause:1"
TOOLS = "fsperf.local/tools:1"  # usr-merged root: /bin, /lib, /lib64, /sbin link into /usr


def _layer(files: dict[str, bytes | str], modes: dict[str, int]) -> bytes:
    """An uncompressed tar layer: a path's bytes, or (str) a symlink to that target."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        dirs: set[str] = set()
        for path in sorted(files):
            parts = path.split("/")[:-1]
            for n in range(1, len(parts) + 1):
                d = "/".join(parts[:n])
                if d not in dirs:
                    dirs.add(d)
                    info = tarfile.TarInfo(d)
                    info.type, info.mode = tarfile.DIRTYPE, 0o755
                    tar.addfile(info)
            content = files[path]
            info = tarfile.TarInfo(path)
            if isinstance(content, str):
                info.type, info.linkname, info.mode = tarfile.SYMTYPE, content, 0o777
                tar.addfile(info)
            else:
                info.size, info.mode = len(content), modes.get(path, 0o644)
                tar.addfile(info, io.BytesIO(content))
    return out.getvalue()


def _blob(tar: tarfile.TarFile, data: bytes) -> str:
    digest = hashlib.sha256(data).hexdigest()
    info = tarfile.TarInfo(f"blobs/sha256/{digest}")
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))
    return f"sha256:{digest}"


def archive(name: str, layer: bytes, entrypoint: list[str], out: Path) -> Path:
    """An OCI image layout archive of one layer, named `name` for `ctr images import`."""
    with tarfile.open(out, "w") as tar:
        layer_digest = _blob(tar, layer)
        config = json.dumps({"architecture": "amd64", "os": "linux",
                             "config": {"Entrypoint": entrypoint, "Env": ["PATH=/usr/sbin:/usr/bin"]},
                             "rootfs": {"type": "layers", "diff_ids": [layer_digest]}}).encode()
        config_digest = _blob(tar, config)
        manifest = json.dumps({
            "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                       "digest": config_digest, "size": len(config)},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar",
                        "digest": layer_digest, "size": len(layer)}]}).encode()
        manifest_digest = _blob(tar, manifest)
        index = json.dumps({"schemaVersion": 2, "manifests": [{
            "mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": manifest_digest,
            "size": len(manifest), "annotations": {"io.containerd.image.name": name,
                                                   "org.opencontainers.image.ref.name": name}}]}).encode()
        for fname, data in (("index.json", index), ("oci-layout", b'{"imageLayoutVersion": "1.0.0"}')):
            info = tarfile.TarInfo(fname)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out


def pause_image(work: Path, gcc: str) -> Path:
    binary = work / "pause"
    subprocess.run([gcc, "-static", "-O2", "-o", str(binary), str(HERE / "pause.c")], check=True)
    layer = _layer({"pause": binary.read_bytes()}, {"pause": 0o755})
    return archive(PAUSE, layer, ["/pause"], work / "pause.tar")


def tools_image(work: Path) -> Path:
    """A root whose /usr is the node's, mounted read-only by each pod (the pod spec says so):
    /bin, /sbin, /lib, /lib64 link into it, as on a usr-merged Debian."""
    links = {"bin": "usr/bin", "sbin": "usr/sbin", "lib": "usr/lib", "lib64": "usr/lib64"}
    layer = _layer({**links, "usr/.keep": b"", "tmp/.keep": b"", "etc/passwd": b"root:x:0:0::/root:/bin/sh\n",
                    "etc/group": b"root:x:0:\n"}, {})
    return archive(TOOLS, layer, ["/usr/bin/sleep", "infinity"], work / "tools.tar")
