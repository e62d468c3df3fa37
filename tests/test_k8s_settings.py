"""--fsperf-k8s without a cluster: what is taken from the command line, the measuring pod
made from the user's template, and the tunnel that carries fio's protocol over the agent's
own connection (a local execnet gateway standing in for `kubectl exec`)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_fsperf.hosts import pods, tunnel
from pytest_fsperf.hosts.spec import Pod, parse_pods

TIER = "fio"  # processes: pytest sessions, an execnet gateway



@pytest.mark.unit
def test_pods_are_kubernetes_names_and_an_absolute_mount() -> None:
    found = parse_pods("client-a:/mnt/m, team/reader.1/app:/data/,x:/")
    assert found == (Pod("client-a", "/mnt/m"), Pod("reader.1", "/data", "team", "app"), Pod("x", "/"))
    assert [p.shown for p in found] == ["default/client-a", "team/reader.1/app", "default/x"]
    for bad, said in (("client-a", "no absolute mount path"), ("--kubeconfig=/x:/m", "is not"),
                      ("Client:/m", "is not"), ("a b:/m", "is not"), ("ns/pod/c/d:/m", "is not"),
                      ("p:/m/../etc", "'..'"), ("p:/m,p:/m", "twice"), (",", "no pods")):
        with pytest.raises(ValueError, match=said):
            parse_pods(bad)


def test_bad_k8s_settings_are_one_line_usage_errors(pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytester.makepyfile("def test_x(fsperf):\n    pass\n")
    template = tmp_path / "meter.json"
    template.write_text(json.dumps({"kind": "Pod", "spec": {"containers": [{"image": "img"}]}}))
    cases = [
        (["--fsperf-k8s=p:/m"], "*--fsperf-k8s=p:/m (command line): needs --fsperf-k8s-meter-pod*"),
        (["--fsperf-k8s=p:/m", "--fsperf-hosts=h:/m", f"--fsperf-k8s-meter-pod={template}"],
         "*--fsperf-k8s=p:/m (command line): conflicts with --fsperf-hosts=h:/m (command line)*"),
        (["--fsperf-k8s=P:/m", f"--fsperf-k8s-meter-pod={template}"], "*'P' is not *"),
        (["--fsperf-k8s-reference=p:/m"], "*needs --fsperf-k8s and --fsperf-reference-mount*"),
        ([f"--fsperf-k8s-meter-pod={tmp_path}/none.json"], "*the pod template * does not exist*"),
        ([f"--fsperf-kubeconfig={tmp_path}"], f"*{tmp_path} is not a file*"),
    ]
    for args, line in cases:
        result = pytester.runpytest("-p", "no:cacheprovider", *args)
        result.stderr.fnmatch_lines([line])
        assert result.ret == 4 and "Traceback" not in result.stderr.str(), result.stderr.str()


def test_the_pod_template_is_a_pod_with_an_image(pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytester.makepyfile("def test_x(fsperf):\n    pass\n")
    for text, said in (("kind: Deployment\n", "is not a Pod with a container and its image"),
                       ("kind: Pod\nspec:\n  containers: []\n", "is not a Pod"),
                       ("{", "neither JSON nor YAML"), ("kind: Pod\nspec:\n  containers:\n  - name: x\n",
                                                        "is not a Pod")):
        (tmp_path / "t.yaml").write_text(text)
        result = pytester.runpytest("-p", "no:cacheprovider", f"--fsperf-k8s-meter-pod={tmp_path}/t.yaml")
        result.stderr.fnmatch_lines([f"*--fsperf-k8s-meter-pod=* (command line): *{said}*"])
        assert result.ret == 4


def test_a_kubeconfig_another_user_may_change_is_refused(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """kubectl runs the commands a kubeconfig names (an exec credential plugin): as root."""
    pytester.makepyfile("def test_x(fsperf):\n    pass\n")
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    config = shared / "config"
    config.write_text("apiVersion: v1\nkind: Config\n")
    result = pytester.runpytest("-p", "no:cacheprovider", f"--fsperf-kubeconfig={config}")
    result.stderr.fnmatch_lines(["*--fsperf-kubeconfig=* (command line): *kubectl would run its commands as you*"])
    assert result.ret == 4


@pytest.mark.unit
def test_the_measuring_pod_is_what_measuring_needs_whatever_the_template_says() -> None:
    template = {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "mine", "generateName": "x-", "labels": {"team": "storage"}},
                "spec": {"hostPID": False, "nodeName": "elsewhere", "restartPolicy": "Always",
                         "containers": [{"name": "c", "image": "registry/fsperf:1", "command": ["evil"],
                                         "args": ["--x"], "securityContext": {"privileged": False},
                                         "env": [{"name": "PYTHONPATH", "value": "/opt"}]},
                                        {"name": "sidecar", "image": "other"}],
                         "volumes": [{"name": "v", "emptyDir": {}}]}}
    made = pods.manifest(template, "node-1", "fsperf-meter-ab-0", "ops", "ab", "/usr/bin/python3", lease_s=7)
    spec, (container,) = made["spec"], made["spec"]["containers"]
    assert made["metadata"]["name"] == "fsperf-meter-ab-0" and "generateName" not in made["metadata"]
    assert made["metadata"]["namespace"] == "ops"
    assert made["metadata"]["labels"] == {"team": "storage", pods.LABEL: "ab"}
    assert spec["nodeName"] == "node-1" and spec["hostPID"] is True and spec["restartPolicy"] == "Never"
    assert spec["activeDeadlineSeconds"] == pods.MAX_AGE_S
    assert container["securityContext"]["privileged"] is True and container["image"] == "registry/fsperf:1"
    assert container["command"][:2] == ["/usr/bin/python3", "-c"] and container["args"] == []
    assert "< 7:" in container["command"][2]  # the lease asked
    assert container["env"] == template["spec"]["containers"][0]["env"]  # kept
    assert {"name": "fsperf-lease", "mountPath": pods.LEASE_DIR} in container["volumeMounts"]
    assert template["spec"]["hostPID"] is False  # the template itself untouched


@pytest.mark.unit
def test_the_execnet_spec_is_kubectl_exec_of_words_it_cannot_read_as_options() -> None:
    kube = pods.Kube("/usr/bin/kubectl", "/etc/k/config", "python3", {})
    spec = kube.spec(Pod("reader.1", "/m", "team", "app"))
    assert spec == ("popen//python=/usr/bin/kubectl --kubeconfig=/etc/k/config -n team exec -i reader.1 "
                    "-c app -- python3")


@pytest.fixture
def gateway() -> Iterator[object]:
    execnet = pytest.importorskip("execnet")
    group = execnet.Group()
    try:
        yield group.makegateway(f"popen//python={sys.executable}")
    finally:  # its process ended and reaped: no child of this one left for a later test to see
        group.terminate(timeout=10)


def _server(path: str, reply: bytes, flood: int = 0) -> threading.Thread:
    """A unix socket server standing for the pod's fio server: echoes what it got with
    `reply` before it, or sends `flood` bytes without reading."""
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path)
    listener.listen(1)

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            if flood:
                chunk = b"x" * 65536
                try:
                    for _ in range(flood // len(chunk)):
                        conn.sendall(chunk)
                except OSError:
                    pass
                return
            got = b""
            while data := conn.recv(65536):
                got += data
            conn.sendall(reply + got)
        listener.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return t


def test_the_tunnel_carries_bytes_both_ways_and_ends_each_side(gateway: object, tmp_path: Path) -> None:
    folder = tmp_path / "s"
    folder.mkdir(mode=0o700)
    server = _server(str(tmp_path / "fio.sock"), b"hello ")
    t = tunnel.Tunnel(gateway, str(tmp_path / "fio.sock"), str(folder / "t.sock"), "pod test")
    try:
        assert oct(os.stat(folder / "t.sock").st_mode & 0o777) == "0o600"
        with socket.socket(socket.AF_UNIX) as c:
            c.connect(t.path)
            c.sendall(b"x" * 300_000)
            c.shutdown(socket.SHUT_WR)  # the server sees the end, answers, and ends
            got = b""
            while data := c.recv(65536):
                got += data
        assert got == b"hello " + b"x" * 300_000
        server.join(5)
    finally:
        t.close()
    assert not (folder / "t.sock").exists()


def test_a_pod_that_floods_its_fio_connection_is_cut_off(gateway: object, tmp_path: Path) -> None:
    """A hostile pod's server sending without end: the tunnel ends that connection after
    MAX_BYTES and says why; the controller's side is never handed more."""
    folder = tmp_path / "s"
    folder.mkdir(mode=0o700)
    _server(str(tmp_path / "fio.sock"), b"", flood=tunnel.MAX_BYTES + (8 << 20))
    t = tunnel.Tunnel(gateway, str(tmp_path / "fio.sock"), str(folder / "t.sock"), "pod hostile")
    try:
        with socket.socket(socket.AF_UNIX) as c:
            c.connect(t.path)
            total = 0
            while data := c.recv(1 << 20):
                total += len(data)
        assert total <= tunnel.MAX_BYTES
        assert t.refused == [f"pod hostile sent more than {tunnel.MAX_BYTES >> 20} MiB on one fio connection: "
                             "ended"]
    finally:
        t.close()


def test_nobody_cannot_connect_to_the_tunnel(gateway: object, tmp_path: Path) -> None:
    folder = tmp_path / "s"
    folder.mkdir(mode=0o700)
    t = tunnel.Tunnel(gateway, str(tmp_path / "fio.sock"), str(folder / "t.sock"), "pod test")
    try:
        code = ("import socket, sys\ns = socket.socket(socket.AF_UNIX)\n"
                "try:\n    s.connect(sys.argv[1]); print('connected')\nexcept OSError as e:\n"
                "    print(type(e).__name__)\n")
        os.chmod(tmp_path, 0o755)
        out = subprocess.run(["/usr/bin/python3", "-c", code, t.path], user=65534, group=65534,
                             extra_groups=[], capture_output=True, text=True, timeout=30).stdout
        assert out.strip() == "PermissionError", out
    finally:
        t.close()


@pytest.mark.parametrize(("answer", "said"), [
    ("not json {", "kubectl's answer is not JSON"),
    ('["a list"]', "is not running on a node (phase None)"),
    ('{"spec": "x", "status": {"phase": "\\u001b[2J\\u001b[32m1 passed"}}', "(phase  [2J [32m1 passed)"),
])
def test_a_kubectl_answer_of_the_wrong_shape_is_one_line(tmp_path: Path, answer: str, said: str) -> None:
    """What the API server answers reaches root's terminal and the report: a wrong shape is a
    named failure, never a traceback, and no escape sequence passes."""
    fake = tmp_path / "kubectl"
    (tmp_path / "answer").write_text(answer)
    fake.write_text(f"#!/bin/sh\ncat {tmp_path / 'answer'}\n")
    fake.chmod(0o755)
    kube = pods.Kube(str(fake), None, "python3", {})
    with pytest.raises(pods.link.HostError) as err:
        pods.node_of(kube, Pod("p", "/m"))
    assert said in str(err.value) and "\x1b" not in str(err.value)


def test_kubectl_never_reads_roots_terminal(tmp_path: Path) -> None:
    """kubectl runs as a service would: stdin what the plugin gives, else an empty pipe. As
    found: without `input`, it inherited the session's stdin (a terminal, or CI's open pipe),
    and a kubectl that reads it (an exec credential plugin prompting) waited there for ever."""
    fake = tmp_path / "kubectl"
    fake.write_text("#!/bin/sh\nif [ -t 0 ]; then echo terminal; else cat; echo end; fi\n")
    fake.chmod(0o755)
    code = (f"import sys; sys.path[:0] = {sys.path!r}\n"
            "from pytest_fsperf.hosts import pods\n"
            f"print(pods.Kube({str(fake)!r}, None, 'python3', {{}}).run('version').strip())")
    held = subprocess.Popen([sys.executable, "-I", "-c", code], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    timer = threading.Timer(30, held.kill)  # its stdin stays open and silent, as a terminal's
    timer.start()
    try:
        assert held.stdout is not None
        out = held.stdout.readline()
    finally:
        timer.cancel()
        held.kill()
        held.wait()
    assert out.strip() == "end", out
