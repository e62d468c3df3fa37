"""--fsperf-k8s on a real one-node cluster (tests/k8s/cluster.py): two client pods read
through a CSI-shaped mount pod's bindfs mount, the mount pod's daemon is measured by the
plugin's measuring pod, and nothing of the plugin is left in the cluster after."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import pytest_fsperf
from tests.k8s import build
from tests.k8s import cluster as k8s

TIER = "fuse"  # root: namespaces, a veth pair, containerd, FUSE
pytest_plugins = ["pytester"]

TOOLS = "fsperf.local/tools:1"
CHECKOUT = str(Path(pytest_fsperf.__file__).resolve().parents[1])
PYTHON = os.path.realpath(sys.executable)
PREFIXES = sorted({os.path.realpath(sys.base_prefix), os.path.realpath(sys.prefix)})


def _host_paths() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The node's /usr, this Python and this checkout, read-only at the same paths: a pod
    runs the plugin under test with the Python that runs the tests."""
    paths = ["/usr", *PREFIXES, CHECKOUT]
    volumes = [{"name": f"h{i}", "hostPath": {"path": p, "type": "Directory"}} for i, p in enumerate(paths)]
    mounts = [{"name": f"h{i}", "mountPath": p, "readOnly": True} for i, p in enumerate(paths)]
    return volumes, mounts


def _pod(name: str, command: list[str], mounts: list[dict[str, Any]], volumes: list[dict[str, Any]],
         privileged: bool = False) -> dict[str, Any]:
    host_volumes, host_mounts = _host_paths()
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {
        "containers": [{"name": name, "image": TOOLS, "imagePullPolicy": "Never", "command": command,
                        "env": [{"name": "PYTHONPATH", "value": CHECKOUT}],
                        "securityContext": {"privileged": privileged},
                        "volumeMounts": [*host_mounts, *mounts]}],
        "volumes": [*host_volumes, *volumes], "terminationGracePeriodSeconds": 0}}


@pytest.fixture(scope="module")
def cluster() -> Iterator[k8s.Cluster]:
    build.wait()
    lack = k8s.missing()
    if lack:
        pytest.skip(f"the Kubernetes cluster cannot start: {'; '.join(lack)} (python3 -m tests.k8s.build)")
    c = k8s.up()
    try:
        yield c
    finally:
        assert not c.down()


def _mounted(cluster: k8s.Cluster, pod: str, path: str) -> None:
    deadline = time.monotonic() + 60
    out = ""
    while time.monotonic() < deadline:
        out = cluster.kubectl("exec", pod, "--", "sh", "-c", f"grep ' {path} ' /proc/self/mountinfo", check=False)
        if " - fuse" in out:
            return
        time.sleep(0.5)
    raise AssertionError(f"{path} not mounted in {pod}: {out}")


@pytest.fixture(scope="module")
def csi(cluster: k8s.Cluster) -> Iterator[dict[str, Any]]:
    """A mount pod running bindfs onto a node path (Bidirectional, as the CSI driver's),
    two application pods seeing it (HostToContainer), and the source's files."""
    source = cluster.dir / "bucket"
    source.mkdir(mode=0o755)
    shared = str(cluster.dir / "csi")
    data = {"name": "data", "hostPath": {"path": str(source), "type": "Directory"}}
    mnt = {"name": "mnt", "hostPath": {"path": shared, "type": "DirectoryOrCreate"}}
    mounter = _pod("mounter", ["sh", "-c", "mkdir -p /mnt/m && exec bindfs -f /data /mnt/m"],
                   [{"name": "data", "mountPath": "/data"},
                    {"name": "mnt", "mountPath": "/mnt", "mountPropagation": "Bidirectional"}],
                   [data, mnt], privileged=True)
    clients = [_pod(f"client-{x}", ["sleep", "infinity"],
                    [{"name": "mnt", "mountPath": "/mnt", "mountPropagation": "HostToContainer"}], [mnt])
               for x in "ab"]
    cluster.apply(mounter, *clients)
    cluster.kubectl("wait", "--for=condition=Ready", "pod/mounter", "pod/client-a", "pod/client-b",
                    "--timeout=120s", timeout=130)
    for name in ("client-a", "client-b"):
        _mounted(cluster, name, "/mnt/m")
    meter = _pod("meter", ["sleep", "infinity"], [], [])
    template = cluster.dir / "meter-pod.json"
    template.write_text(json.dumps(meter))
    yield {"source": source, "template": template}
    cluster.kubectl("delete", "pod", "mounter", "client-a", "client-b", "--wait=true", "--timeout=60s",
                    timeout=70)


def test_two_client_pods_read_through_the_mount_pod_whose_daemon_is_measured(
        cluster: k8s.Cluster, csi: dict[str, Any], pytester: pytest.Pytester,
        monkeypatch: pytest.MonkeyPatch) -> None:
    local = pytester.path / "local"
    local.mkdir()
    import subprocess

    subprocess.run(["bindfs", str(csi["source"]), str(local)], check=True)
    try:
        pytester.makepyfile(test_pods="""
            def test_read(fsperf):
                fsperf.cold()
                fsperf.fio(name="read", rw="read", bs="1M", size="16M")
        """)
        monkeypatch.setenv("PATH", f"{build.BIN}:{os.environ['PATH']}")  # kubectl
        report = pytester.path / "r.json"
        result = pytester.runpytest_subprocess(
            "-p", "no:cacheprovider", f"--fsperf-mount={local}", f"--fsperf-json={report}",
            "--fsperf-k8s=client-a:/mnt/m,default/client-b:/mnt/m",
            f"--fsperf-kubeconfig={cluster.kubeconfig}", f"--fsperf-k8s-meter-pod={csi['template']}",
            f"--fsperf-host-python={PYTHON}", "--fsperf-rounds=1", timeout=600)
    finally:
        subprocess.run(["fusermount", "-u", str(local)], check=False)
    assert result.ret == 0, result.stdout.str()[-3000:]
    found = json.loads(report.read_text())
    row = found["results"][0]
    clients = row["clients"]
    assert [c["host"].split(" (")[0] for c in clients] == ["pod default/client-a", "pod default/client-b"]
    first, second = clients
    assert first["daemon"]["cpu_seconds"] > 0 and first["daemon"]["peak_rss_bytes"] > 0, first
    assert "fsperf-node" in first["host"]
    assert second["daemon"] is None and "client-a" in second["daemon_note"]
    (proc,) = row["daemon"]["processes"]
    assert proc["command"].startswith("bindfs -f /data /mnt/m") and "fsperf-node" in proc["role"], proc
    _nothing_left(cluster)


def _nothing_left(cluster: k8s.Cluster) -> None:
    """No measuring pod, and in the client pods no agent, fio server or directory of ours."""
    left = cluster.kubectl("get", "pods", "-A", "-l", "pytest-fsperf.io/session", "-o", "name")
    assert left.strip() == "", left
    look = ("import os\nfor p in filter(str.isdigit, os.listdir('/proc')):\n"
            "    c = open(f'/proc/{p}/cmdline', 'rb').read().replace(b'\\0', b' ').decode()\n"
            "    print(c) if int(p) != os.getpid() and ('fsperf' in c or 'fio' in c) else None\n"
            "state = '/tmp/pytest-fsperf.state-0'\n"  # the agents' record of what they made: kept, empty
            "print(*[n for n in os.listdir('/tmp') if 'fsperf' in n and n != state[5:]])\n"
            "print(*(os.listdir(state) if os.path.isdir(state) else []))\n")
    for pod in ("client-a", "client-b"):
        out = cluster.kubectl("exec", pod, "--", PYTHON, "-c", look)
        assert out.strip() == "", (pod, out)
