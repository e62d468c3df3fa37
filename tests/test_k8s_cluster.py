"""The one-node Kubernetes cluster the Kubernetes tests run on (tests/k8s/cluster.py): it
starts from the cached binaries, runs pods of the locally made images, and leaves nothing."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.k8s import cluster as k8s

TIER = "fuse"  # root: namespaces, a veth pair, containerd

POD = {
    "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "client"},
    "spec": {"containers": [{
        "name": "client", "image": "fsperf.local/tools:1", "imagePullPolicy": "Never",
        "volumeMounts": [{"name": "usr", "mountPath": "/usr", "readOnly": True}]}],
        "volumes": [{"name": "usr", "hostPath": {"path": "/usr", "type": "Directory"}}],
        "terminationGracePeriodSeconds": 0}}


@pytest.fixture(scope="module")
def cluster() -> Iterator[k8s.Cluster]:
    lack = k8s.missing()
    if lack:
        pytest.skip(f"the Kubernetes cluster needs {', '.join(lack)} (python3 -m tests.k8s.cluster build)")
    started = time.monotonic()
    c = k8s.up()
    print(f"cluster up in {time.monotonic() - started:.0f} s")
    try:
        yield c
    finally:
        assert not c.down()


def test_a_pod_runs_the_nodes_tools_and_is_reached_by_exec(cluster: k8s.Cluster) -> None:
    subprocess.run([str(k8s.BIN / "kubectl"), f"--kubeconfig={cluster.kubeconfig}", "apply", "-f", "-"],
                   input=json.dumps(POD), text=True, check=True, capture_output=True)
    cluster.kubectl("wait", "--for=condition=Ready", "pod/client", "--timeout=120s", timeout=130)
    out = cluster.kubectl("exec", "client", "--", "sh", "-c", "fio --version; python3 -c 'print(6*7)'")
    version, answer = out.split()
    assert version.startswith("fio-") and answer == "42", out
    node = json.loads(cluster.kubectl("get", "pod", "client", "-o", "json"))
    assert node["spec"]["nodeName"] == k8s.NODE
    assert node["status"]["podIP"].startswith("10.214.0.")  # the cluster's own range


def test_down_leaves_no_process_link_cgroup_or_directory(cluster: k8s.Cluster) -> None:
    """A second cluster, stopped: nothing of it is left on the machine."""
    other = k8s.up()
    holder, index, where = other.holder_pid, other.index, other.dir
    assert not other.down()
    assert not Path(f"/proc/{holder}").exists()
    assert f"fsk{index}h" not in os.listdir("/sys/class/net")
    assert not any(Path(f"/sys/fs/cgroup/{c}/fsperf-k8s-{index}").exists() for c in k8s.CGROUP_CONTROLLERS)
    assert not where.exists()
