"""--fsperf-k8s on a real one-node cluster (tests/k8s/cluster.py): two client pods read
through a CSI-shaped mount pod's bindfs mount, the mount pod's daemon is measured by the
plugin's measuring pod, and nothing of the plugin is left in the cluster after."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import pytest_fsperf
from pytest_fsperf.hosts import pods
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
    given = ["/usr", *PREFIXES, CHECKOUT]
    paths = [p for p in dict.fromkeys(given)  # once each, none inside another (Debian's Python is /usr's)
             if not any(p != q and p.startswith(q.rstrip("/") + "/") for q in given)]
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


BAD_OPTIONS = "direct_io,max_read=4096"  # every read 4 KiB to the daemon: a request-size regression


def _mount_pod(name: str, source: Path, shared: str, point: str, options: str = "") -> dict[str, Any]:
    """A CSI driver's mount pod: the daemon onto a node path shared Bidirectional; its
    options are what a PersistentVolume's mountOptions become."""
    data = {"name": "data", "hostPath": {"path": str(source), "type": "Directory"}}
    mnt = {"name": "mnt", "hostPath": {"path": shared, "type": "DirectoryOrCreate"}}
    flags = f"-o {options} " if options else ""
    return _pod(name, ["sh", "-c", f"mkdir -p /mnt/{point} && exec bindfs -f {flags}/data /mnt/{point}"],
                [{"name": "data", "mountPath": "/data"},
                 {"name": "mnt", "mountPath": "/mnt", "mountPropagation": "Bidirectional"}],
                [data, mnt], privileged=True)


@pytest.fixture(scope="module")
def csi(cluster: k8s.Cluster) -> Iterator[dict[str, Any]]:
    """Two mount pods of one source, as before and after a change of mountOptions (ref, new),
    and two application pods that see both mounts (HostToContainer)."""
    source = cluster.dir / "bucket"
    source.mkdir(mode=0o755)
    shared = str(cluster.dir / "csi")
    mnt = {"name": "mnt", "hostPath": {"path": shared, "type": "DirectoryOrCreate"}}
    clients = [_pod(f"client-{x}", ["sleep", "infinity"],
                    [{"name": "mnt", "mountPath": "/mnt", "mountPropagation": "HostToContainer"}], [mnt])
               for x in "ab"]
    cluster.apply(_mount_pod("mounter-ref", source, shared, "ref"),
                  _mount_pod("mounter-new", source, shared, "new", BAD_OPTIONS), *clients)
    cluster.kubectl("wait", "--for=condition=Ready", "pod/mounter-ref", "pod/mounter-new", "pod/client-a",
                    "pod/client-b", "--timeout=120s", timeout=130)
    for name in ("client-a", "client-b"):
        _mounted(cluster, name, "/mnt/ref")
        _mounted(cluster, name, "/mnt/new")
    meter = _pod("meter", ["sleep", "infinity"], [], [])
    template = cluster.dir / "meter-pod.json"
    template.write_text(json.dumps(meter))
    yield {"source": source, "template": template}
    cluster.kubectl("delete", "pod", "mounter-ref", "mounter-new", "client-a", "client-b", "--wait=true",
                    "--timeout=60s", timeout=70)


@contextlib.contextmanager
def _local(where: Path, source: Path) -> Iterator[Path]:
    """This machine's own mount of the source, where the plugin lays out the files."""
    where.mkdir()
    subprocess.run(["bindfs", str(source), str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["fusermount", "-u", str(where)], check=False)


def _k8s_args(cluster: k8s.Cluster, csi: dict[str, Any], pods: str) -> list[str]:
    return ["-p", "no:cacheprovider", f"--fsperf-k8s={pods}", f"--fsperf-kubeconfig={cluster.kubeconfig}",
            f"--fsperf-k8s-meter-pod={csi['template']}", f"--fsperf-host-python={PYTHON}"]


READ = """
    def test_read(fsperf):
        fsperf.cold()
        fsperf.fio(name="read", rw="read", bs="1M", size="32M")
"""


def test_two_client_pods_read_through_the_mount_pod_whose_daemon_is_measured(
        cluster: k8s.Cluster, csi: dict[str, Any], pytester: pytest.Pytester,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"{build.BIN}:{os.environ['PATH']}")  # kubectl
    pytester.makepyfile(test_pods="import pytest\n\n\n@pytest.mark.fsperf(max_rss='2GB')" + textwrap.dedent(READ))
    report = pytester.path / "r.json"
    with _local(pytester.path / "local", csi["source"]) as local:
        result = pytester.runpytest_subprocess(
            *_k8s_args(cluster, csi, "client-a:/mnt/ref,default/client-b:/mnt/ref"),
            f"--fsperf-mount={local}", f"--fsperf-json={report}", "--fsperf-rounds=1", timeout=600)
    assert result.ret == 0, result.stdout.str()[-3000:]
    row = json.loads(report.read_text())["results"][0]
    first, second = row["clients"]
    assert (first["host"], first["pod"]) == ("default/client-a (node fsperf-node)", True)
    assert (second["host"], second["daemon_of"]) == ("default/client-b (node fsperf-node)", "pod default/client-a")
    assert first["daemon"]["cpu_seconds"] > 0 and first["daemon"]["peak_rss_bytes"] > 0, first
    assert first["cold_read"] == "verified", first["cold_evidence"]
    assert second["daemon"] is None and "client-a" in second["daemon_note"]
    assert row["read"]["io_bytes"] == 2 * 32 << 20
    assert row["verdict"] == "pass" and row["not_judged"] == [], row["not_judged"]  # the node's daemon, once
    (proc,) = row["daemon"]["processes"]  # the mount pod's bindfs, a process of the node
    assert proc["command"].startswith("bindfs -f /data /mnt/ref") and "fsperf-node" in proc["role"], proc
    _nothing_left(cluster)


def test_a_mount_option_changed_in_the_mount_pods_spec_is_gated(
        cluster: k8s.Cluster, csi: dict[str, Any], pytester: pytest.Pytester,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference's pods read through the mount pod of the old mountOptions, the
    candidate's through the new one's (4 KiB reads): interleaved pairs, each side's daemon
    measured on the node, and the gate finds the candidate worse."""
    monkeypatch.setenv("PATH", f"{build.BIN}:{os.environ['PATH']}")
    pytester.makepyfile(test_gate=READ)
    report = pytester.path / "r.json"
    with _local(pytester.path / "new", csi["source"]) as new, \
            _local(pytester.path / "ref", csi["source"]) as ref:
        result = pytester.runpytest_subprocess(
            *_k8s_args(cluster, csi, "client-a:/mnt/new"), "--fsperf-k8s-reference=client-a:/mnt/ref",
            f"--fsperf-mount={new}", f"--fsperf-reference-mount={ref}", f"--fsperf-json={report}",
            "--fsperf-gate-on=primary", "--fsperf-ab-max-rounds=8", "--fsperf-settle=off", timeout=900)
    doc = json.loads(report.read_text())
    (c,) = doc["comparisons"]
    assert c["kind"] == "mount gate" and c["metrics"]["bw"]["outcome"] == "B worse", c["metrics"]["bw"]
    assert result.ret == 1, result.stdout.str()[-3000:]
    assert c["profile_note"].startswith("not profiled: the daemons ran on other hosts or nodes"), c
    reads = {r["name"]: r for r in doc["results"]}
    commands = {name: r["daemon"]["processes"][0]["command"] for name, r in reads.items()}
    assert commands["read"].startswith(f"bindfs -f -o {BAD_OPTIONS} /data /mnt/new"), commands
    assert commands["read[reference]"].startswith("bindfs -f /data /mnt/ref"), commands
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


def test_a_pod_whose_path_is_no_fuse_mount_fails_the_test_naming_it(
        cluster: k8s.Cluster, csi: dict[str, Any], pytester: pytest.Pytester,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"{build.BIN}:{os.environ['PATH']}")
    pytester.makepyfile(test_pods=READ)
    with _local(pytester.path / "local", csi["source"]) as local:
        result = pytester.runpytest_subprocess(*_k8s_args(cluster, csi, "client-a:/usr,client-b:/nowhere"),
                                               f"--fsperf-mount={local}", timeout=300)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*pod default/client-a: /usr is not a FUSE mount there (ext4)*"])
    _nothing_left(cluster)


def test_a_killed_sessions_measuring_pod_ends_by_its_lease_and_is_swept(
        cluster: k8s.Cluster, csi: dict[str, Any]) -> None:
    """No agent touches the lease (its session was killed): the pod's first process ends it;
    the next session's measuring pods take its object away, and leave a running one alone."""
    template = json.loads(csi["template"].read_text())
    stale = pods.manifest(template, k8s.NODE, "fsperf-meter-dead-0", "default", "dead", PYTHON, lease_s=3)
    alive = pods.manifest(template, k8s.NODE, "fsperf-meter-live-0", "default", "live", PYTHON, lease_s=3600)
    cluster.kubectl("create", "-f", "-", stdin=json.dumps(stale) + "\n---\n" + json.dumps(alive))
    cluster.kubectl("wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/fsperf-meter-dead-0",
                    "--timeout=60s", timeout=70)
    cluster.kubectl("wait", "--for=condition=Ready", "pod/fsperf-meter-live-0", "--timeout=60s", timeout=70)
    kube = pods.Kube(k8s.program("kubectl"), str(cluster.kubeconfig), PYTHON, template)
    with pods.measuring_pods(kube, [k8s.NODE], "default") as made:
        assert list(made) == [k8s.NODE]
    left = cluster.kubectl("get", "pods", "-l", pods.LABEL, "-o", "name").split()
    assert left == ["pod/fsperf-meter-live-0"], left
    cluster.kubectl("delete", "pod", "fsperf-meter-live-0", "--wait=true", timeout=70)


def _identity(cluster: k8s.Cluster, pods_verbs: list[str]) -> Path:
    """A kubeconfig of a service account holding only what how-to/kubernetes.md asks: in the
    measuring pods' namespace `pods_verbs` on pods and create on pods/exec; in the client
    pods' namespace get on pods and create on pods/exec."""
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role"}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "subjects": [{"kind": "ServiceAccount", "name": "gate", "namespace": "fsperf"}]}
    objects: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "gate", "namespace": "fsperf"}}]
    for namespace, verbs in (("fsperf", pods_verbs), ("default", ["get"])):
        rules = [{"apiGroups": [""], "resources": ["pods"], "verbs": verbs},
                 {"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["create"]}]
        meta = {"name": "fsperf-gate", "namespace": namespace}
        objects += [{**role, "metadata": meta, "rules": rules},
                    {**binding, "metadata": meta, "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                                              "kind": "Role", "name": "fsperf-gate"}}]
    cluster.apply(*objects)
    token = cluster.kubectl("-n", "fsperf", "create", "token", "gate", "--duration=1h").strip()
    config = json.loads(cluster.kubeconfig.read_text())
    config["users"] = [{"name": "gate", "user": {"token": token}}]
    config["contexts"][0]["context"]["user"] = "gate"
    path = cluster.dir / f"gate-{len(pods_verbs)}.kubeconfig"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(config, f)
    return path


def test_the_least_privilege_the_how_to_names_is_enough_and_less_is_refused_by_name(
        cluster: k8s.Cluster, csi: dict[str, Any], pytester: pytest.Pytester,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The RBAC of how-to/kubernetes.md, as a service account's: the run passes with it. As
    found: without `delete` on pods the measuring pod was left, its deletion's refusal
    swallowed; now the test fails naming it (and the pod ends by its lease)."""
    monkeypatch.setenv("PATH", f"{build.BIN}:{os.environ['PATH']}")
    cluster.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fsperf"}})
    template = json.loads(csi["template"].read_text())
    template["metadata"]["namespace"] = "fsperf"
    (pytester.path / "meter.json").write_text(json.dumps(template))
    pytester.makepyfile(test_pods=READ)
    for verbs, passes in ((["create", "get", "list", "watch", "delete"], True), (["create", "get", "list", "watch"], False)):
        config = _identity(cluster, verbs)
        with _local(pytester.path / f"local{len(verbs)}", csi["source"]) as local:
            result = pytester.runpytest_subprocess(
                "-p", "no:cacheprovider", "--fsperf-k8s=client-a:/mnt/ref", f"--fsperf-kubeconfig={config}",
                f"--fsperf-k8s-meter-pod={pytester.path / 'meter.json'}", f"--fsperf-host-python={PYTHON}",
                f"--fsperf-mount={local}", "--fsperf-rounds=1", timeout=300)
        if passes:
            assert result.ret == 0, result.stdout.str()[-3000:]
        else:
            result.assert_outcomes(failed=1)
            result.stdout.fnmatch_lines(["*the measuring pods of this run could not be deleted (kubectl -n "
                                         "fsperf delete: *forbidden*; each ends itself within 60 s*"])
    cluster.kubectl("-n", "fsperf", "delete", "pods", "-l", pods.LABEL, "--wait=true", timeout=70)
    _nothing_left(cluster)
