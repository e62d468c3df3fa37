"""The one-node Kubernetes cluster the Kubernetes tests run on (tests/k8s/cluster.py): it
starts from the cached binaries, runs pods of the locally made images, and leaves nothing."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.k8s import build
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
    build.wait()  # CI builds the binaries beside the first tests
    lack = k8s.missing()
    if lack:
        pytest.skip(f"the Kubernetes cluster cannot start: {'; '.join(lack)} (python3 -m tests.k8s.build)")
    started = time.monotonic()
    c = k8s.up()
    print(f"cluster up in {time.monotonic() - started:.0f} s")
    try:
        yield c
    finally:
        assert not c.down()


def test_a_pod_runs_the_nodes_tools_and_is_reached_by_exec(cluster: k8s.Cluster) -> None:
    cluster.apply(POD)
    cluster.kubectl("wait", "--for=condition=Ready", "pod/client", "--timeout=120s", timeout=130)
    out = cluster.kubectl("exec", "client", "--", "sh", "-c", "fio --version; python3 -c 'print(6*7)'")
    version, answer = out.split()
    assert version.startswith("fio-") and answer == "42", out
    node = json.loads(cluster.kubectl("get", "pod", "client", "-o", "json"))
    assert node["spec"]["nodeName"] == k8s.NODE
    assert node["status"]["podIP"].startswith("10.214.0.")  # the cluster's own range


def test_a_local_user_reaches_neither_the_kubelet_nor_the_api_without_a_token(cluster: k8s.Cluster) -> None:
    """As found: the kubelet listened on the node's address with anonymous access, and any
    local user (nobody) could have run commands in the cluster's privileged pods through it.
    Now it listens on the cluster's loopback only, and the API answers no one without a token."""
    code = ("import socket, ssl, sys, urllib.request, urllib.error\n"
            "try:\n    socket.create_connection((sys.argv[1], 10250), timeout=3); print('kubelet open')\n"
            "except OSError as e:\n    print('kubelet', type(e).__name__)\n"
            "ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE\n"
            "try:\n    urllib.request.urlopen(f'https://{sys.argv[1]}:6443/api/v1/pods', context=ctx, timeout=5)\n"
            "    print('api open')\n"
            "except urllib.error.HTTPError as e:\n    print('api', e.code)\n")
    out = subprocess.run(["/usr/bin/python3", "-c", code, cluster.node_ip], user=65534, group=65534,
                         extra_groups=[], capture_output=True, text=True, timeout=30, check=True).stdout
    assert out.split() == ["kubelet", "ConnectionRefusedError", "api", "401"], out
    cluster.apply(POD)  # and the apiserver still reaches it: exec works
    cluster.kubectl("wait", "--for=condition=Ready", "pod/client", "--timeout=120s", timeout=130)
    assert cluster.kubectl("exec", "client", "--", "echo", "reached").strip() == "reached"


def _listeners(pid: int) -> set[tuple[str, int]]:
    """(address, port) of every TCP socket listening in `pid`'s network namespace."""
    import ipaddress

    found = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            if state != "0A":  # LISTEN
                continue
            addr, port = local.split(":")
            raw = bytes.fromhex(addr)
            packed = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))  # host order words
            found.add((str(ipaddress.ip_address(packed)), int(port, 16)))
    return found


def test_the_cluster_listens_on_its_loopback_but_for_the_api_and_routes_nowhere(cluster: k8s.Cluster) -> None:
    """Every listener of etcd, the controllers, the kubelet and containerd's stream server is
    on the namespace's loopback; only the API is on the node's address (token only, above);
    and the namespace has no route past its /30 and the pods' bridge (no cloud metadata, no
    version check can leave)."""
    outside = {(a, p) for a, p in _listeners(cluster.holder_pid) if a not in ("127.0.0.1", "::1")}
    assert outside == {(cluster.node_ip, 6443)}, outside
    routes = Path(f"/proc/{cluster.holder_pid}/net/route").read_text().splitlines()[1:]
    assert not [r for r in routes if r.split()[1] == "00000000"], routes  # no default route


def test_down_leaves_no_process_link_cgroup_or_directory(cluster: k8s.Cluster) -> None:
    """A second cluster, stopped: nothing of it is left on the machine, not even where its
    components write without being told (a pod started in it: its shim, netns, CNI result, logs)."""
    before = _machine_wide()
    other = k8s.up()
    other.apply(POD)
    other.kubectl("wait", "--for=condition=Ready", "pod/client", "--timeout=120s", timeout=130)
    holder, index, where = other.holder_pid, other.index, other.dir
    assert not other.down()
    assert not Path(f"/proc/{holder}").exists()
    assert f"fsk{index}h" not in os.listdir("/sys/class/net")
    assert not any(Path(f"/sys/fs/cgroup/{c}/fsperf-k8s-{index}").exists() for c in k8s.CGROUP_CONTROLLERS)
    assert not where.exists()
    assert _machine_wide() == before


def _machine_wide() -> dict[str, set[str]]:
    """What the places a kubelet or containerd writes by default hold (other sessions' things
    too: only names a cluster's components use are kept)."""
    words = ("containerd", "kubelet", "cni", "pods", "containers", "runc", "etcd")
    found = {}
    for place in ("/run", "/run/netns", "/var/lib", "/var/log", "/var/run", "/opt", "/etc"):
        with contextlib.suppress(OSError):
            found[place] = {n for n in os.listdir(place) if any(w in n for w in words)}
    return found


def test_a_killed_session_leaves_nothing_a_sweep_does_not_take(cluster: k8s.Cluster, tmp_path: Path) -> None:
    """The process that started a cluster, SIGKILLed: the cluster's processes die with it
    (the holder's parent-death signal), and the next session's sweep of its leftovers record
    takes the directory and cgroups."""
    from pytest_fsperf.infra import leftovers

    folder = tmp_path / "record"
    folder.mkdir(mode=0o700)
    code = ("import json, sys, time\nfrom pytest_fsperf.infra import leftovers\nfrom tests.k8s import cluster\n"
            f"leftovers.start({str(folder)!r})\nc = cluster.up()\n"
            "print(json.dumps(c.state()), flush=True)\ntime.sleep(600)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                            cwd=Path(__file__).resolve().parent.parent)
    assert proc.stdout is not None
    state = json.loads(proc.stdout.readline())
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 10
    while Path(f"/proc/{state['holder']}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not Path(f"/proc/{state['holder']}").exists()
    assert f"fsk{state['index']}h" not in os.listdir("/sys/class/net")  # gone with its namespace
    assert Path(state["dir"]).exists()  # until the sweep
    said = leftovers.sweep(str(folder))
    assert not Path(state["dir"]).exists(), said
    assert not any(Path(f"/sys/fs/cgroup/{c}/fsperf-k8s-{state['index']}").exists()
                   for c in k8s.CGROUP_CONTROLLERS), said


def _pod(name: str, command: list[str], mounts: list[dict[str, object]], volumes: list[dict[str, object]],
         privileged: bool = False) -> dict[str, object]:
    usr = {"name": "usr", "hostPath": {"path": "/usr", "type": "Directory"}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {
        "containers": [{"name": name, "image": "fsperf.local/tools:1", "imagePullPolicy": "Never",
                        "command": command, "securityContext": {"privileged": privileged},
                        "volumeMounts": [{"name": "usr", "mountPath": "/usr", "readOnly": True}, *mounts]}],
        "volumes": [usr, *volumes], "terminationGracePeriodSeconds": 0}}


def test_a_csi_shaped_mount_pod_serves_application_pods(cluster: k8s.Cluster) -> None:
    """As the OSS CSI driver's mount pods do: a privileged pod runs the FUSE daemon (bindfs
    here) onto a host path with Bidirectional propagation; an application pod sees the mount
    through HostToContainer and reads through it; the daemon is a process of the node, found
    from the node's mountinfo (what the measuring pod will do)."""
    shared = str(cluster.dir / "csi")  # the node's paths: inside the cluster's private directory
    data = {"name": "data", "hostPath": {"path": str(cluster.dir / "csi-data"), "type": "DirectoryOrCreate"}}
    mnt = {"name": "mnt", "hostPath": {"path": shared, "type": "DirectoryOrCreate"}}
    mount_pod = _pod("mounter", ["sh", "-c", "head -c 1048576 /dev/urandom > /data/f && mkdir -p /mnt/m && "
                                 "exec bindfs -f /data /mnt/m"],
                     [{"name": "data", "mountPath": "/data"},
                      {"name": "mnt", "mountPath": "/mnt", "mountPropagation": "Bidirectional"}],
                     [data, mnt], privileged=True)
    reader = _pod("reader", ["sleep", "infinity"],
                  [{"name": "mnt", "mountPath": "/mnt", "mountPropagation": "HostToContainer"}], [mnt])
    cluster.apply(mount_pod, reader)
    cluster.kubectl("wait", "--for=condition=Ready", "pod/mounter", "pod/reader", "--timeout=120s", timeout=130)
    deadline = time.monotonic() + 30
    out = ""
    while time.monotonic() < deadline:  # bindfs mounts once it runs
        out = cluster.kubectl("exec", "reader", "--", "sh", "-c",
                              "grep ' /mnt/m ' /proc/self/mountinfo; wc -c < /mnt/m/f", check=False)
        if "fuse" in out and out.split()[-1] == "1048576":
            break
        time.sleep(0.5)
    assert "fuse" in out and out.split()[-1] == "1048576", out
    node = Path(f"/proc/{cluster.holder_pid}/mountinfo").read_text()  # the node's own mount table
    line = next(x for x in node.splitlines() if f" {shared}/m " in x)
    assert " - fuse" in line
    daemons = [p for p in os.listdir("/proc") if p.isdigit()
               and Path(f"/proc/{p}/comm").read_text().strip() == "bindfs"
               and os.readlink(f"/proc/{p}/ns/pid") != os.readlink("/proc/self/ns/pid")]
    assert daemons, "the mount pod's daemon is not a process of the machine"
    cluster.kubectl("delete", "pod", "mounter", "reader", "--wait=true", "--timeout=60s", timeout=70)


@pytest.mark.unit
def test_a_build_file_naming_another_process_is_not_waited_for(tmp_path: Path) -> None:
    """A killed build leaves its PID file; a process that has that PID by now is no build,
    and the cluster's tests do not wait 30 minutes on it."""
    out = tmp_path / "k8s"
    build.building(out).write_text(str(os.getpid()))  # this process: not a build
    started = time.monotonic()
    build.wait(out, timeout=20)
    assert time.monotonic() - started < 1
