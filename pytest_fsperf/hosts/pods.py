"""The hosts mode on Kubernetes (--fsperf-k8s): clients in pods, one measuring pod a node.

Each client pod named runs the agent (agent.py) over `kubectl exec -i`, execnet speaking
its protocol on the exec's stdin and stdout as it does over ssh; its fio server is reached
through a tunnel on that connection (tunnel.py). The FUSE daemon serving a pod's mount runs
elsewhere (the CSI driver's mount pod, a Fluid runtime's FUSE pod): on each node that holds
a client, one measuring pod made from the user's template (--fsperf-k8s-meter-pod), made
privileged, sharing the node's PIDs and pinned to that node, runs the agent too; told the
FUSE connection of the clients' mount (the device number every namespace sees alike), it
finds the daemon in the node's /proc, drops the node's page cache and meters the daemon.

A measuring pod can do anything on its node: it lives only as long as the session needs
it, is deleted at the end, and, should the session be killed, ends itself once its lease
(a file its agent touches every few seconds) is LEASE_S old."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_fsperf.hosts import link, replies, tunnel
from pytest_fsperf.hosts.spec import Pod
from pytest_fsperf.infra import leftovers, trust

LEASE_S = 60  # a measuring pod whose lease is this old ends
LEASE_DIR = "/fsperf-lease"
READY_S = 180  # s for a measuring pod to run (an image pulled on a node first)
MAX_AGE_S = 24 * 3600  # a measuring pod's activeDeadlineSeconds: whatever else fails
LABEL = "pytest-fsperf.io/session"


@dataclass(frozen=True)
class Kube:
    """How the cluster is reached: kubectl (its checked path), the kubeconfig (None:
    kubectl's own default), the pods' Python, the measuring pod's template (a Pod, as JSON)."""

    kubectl: str
    kubeconfig: str | None
    python: str
    meter_pod: Mapping[str, Any]

    def argv(self, *args: str) -> list[str]:
        return [self.kubectl, *([f"--kubeconfig={self.kubeconfig}"] if self.kubeconfig else []),
                *args]

    def run(self, *args: str, stdin: str | None = None, timeout: float = 60.0) -> str:
        """kubectl's output; HostError with what it said where it failed."""
        try:
            done = subprocess.run(  # stdin: what is given, else nothing (never root's terminal)
                self.argv(*args), input=stdin if stdin is not None else "", capture_output=True,
                text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            raise link.HostError(f"kubectl {args[0]} did not answer in {timeout:.0f} s") from None
        if done.returncode:
            said = [ln for ln in done.stderr.splitlines() if ln.strip()][-1:] or ["no reason"]
            raise link.HostError(f"kubectl {' '.join(args[:3])}: {said[0][:300]}")
        return done.stdout

    def spec(self, pod: Pod) -> str:
        """execnet's spec: the agent's Python in the pod, over kubectl exec -i."""
        container = ["-c", pod.container] if pod.container else []
        words = self.argv("-n", pod.namespace, "exec", "-i", pod.name, *container, "--",
                          self.python)
        return "popen//python=" + " ".join(words)


def kubectl() -> str:
    """kubectl as root may run it (its real path and directories checked), one word for
    execnet's spec."""
    program, why = trust.which("kubectl")
    if program is None:
        raise link.HostError(f"kubectl is not run: {why}" if why else
                             "--fsperf-k8s needs kubectl on PATH")
    if any(c.isspace() for c in program) or "//" in program:
        raise link.HostError(f"kubectl's path {program!r} holds whitespace or '//' (execnet "
                             "splits on them)")
    return program


def node_of(kube: Kube, pod: Pod) -> str:
    try:
        found = json.loads(kube.run("-n", pod.namespace, "get", "pod", pod.name, "-o", "json"))
    except ValueError:
        raise link.HostError(f"pod {pod.shown}: kubectl's answer is not JSON") from None
    spec, status = (found.get(k) if isinstance(found, dict) else None for k in ("spec", "status"))
    node = spec.get("nodeName") if isinstance(spec, dict) else None
    phase = status.get("phase") if isinstance(status, dict) else None
    if not isinstance(node, str) or not node or phase != "Running":
        said = replies.clean(str(phase))[:40]  # the API's words reach the terminal: no escapes
        raise link.HostError(f"pod {pod.shown} is not running on a node (phase {said})")
    return node


def lease_code(seconds: int) -> str:
    """The measuring pod's first process: it ends the pod once its lease is `seconds` old."""
    return (f"import os, time\np = '{LEASE_DIR}/lease'\nopen(p, 'a').close()\n"
            f"while time.time() - os.stat(p).st_mtime < {seconds}:\n    time.sleep(1)\n")


def manifest(template: Mapping[str, Any], node: str, name: str, namespace: str,
             session: str, python: str, lease_s: int = LEASE_S) -> dict[str, Any]:
    """The measuring pod for `node`: the template's image, volumes and settings, with what
    measuring needs put over them (privileged, the node's PIDs, pinned, its lease)."""
    pod: dict[str, Any] = json.loads(json.dumps(template))
    meta = pod.setdefault("metadata", {})
    meta.update(name=name, namespace=namespace)
    meta.pop("generateName", None)
    meta.setdefault("labels", {})[LABEL] = session
    spec = pod.setdefault("spec", {})
    spec.update(nodeName=node, hostPID=True, restartPolicy="Never",
                activeDeadlineSeconds=MAX_AGE_S, terminationGracePeriodSeconds=0,
                tolerations=[{"operator": "Exists"}])
    spec.setdefault("volumes", []).append({"name": "fsperf-lease", "emptyDir": {"medium": "Memory"}})
    container = spec["containers"][0]
    container.update(name="meter", command=[python, "-c", lease_code(lease_s)], args=[])
    container.setdefault("securityContext", {})["privileged"] = True
    container.setdefault("volumeMounts", []).append({"name": "fsperf-lease", "mountPath": LEASE_DIR})
    spec["containers"] = [container]
    return pod


@contextlib.contextmanager
def measuring_pods(kube: Kube, nodes: Sequence[str], namespace: str) -> Iterator[dict[str, Pod]]:
    """One measuring pod on each node, running; all deleted on the way out."""
    session = os.urandom(4).hex()
    made: dict[str, Pod] = {}
    # measuring pods of killed sessions ended on their own (their lease): their objects go
    kube.run("-n", namespace, "delete", "pod", "-l", LABEL, "--wait=false",
             "--field-selector=status.phase!=Running,status.phase!=Pending")
    done = False
    try:
        for i, node in enumerate(nodes):
            name = f"fsperf-meter-{session}-{i}"
            body = manifest(kube.meter_pod, node, name, namespace, session, kube.python)
            made[node] = Pod(name, "", namespace, "meter")
            kube.run("create", "-f", "-", stdin=json.dumps(body))
        for pod in made.values():
            kube.run("-n", namespace, "wait", "--for=condition=Ready", f"pod/{pod.name}",
                     f"--timeout={READY_S}s", timeout=READY_S + 10)
        yield made
        done = True
    finally:
        if made:
            try:
                kube.run("-n", namespace, "delete", "pod", "-l", f"{LABEL}={session}",
                         "--wait=true", "--timeout=60s", timeout=70)
            except link.HostError as exc:
                if done:  # else the failure in flight is the cause; this one is said there
                    raise link.HostError(
                        f"the measuring pods of this run could not be deleted ({exc}); each "
                        f"ends itself within {LEASE_S} s (its lease)") from None


def _client(kube: Kube, pod: Pod, index: int, folder: str) -> link.Link:
    made = link.start(pod, index, kube.spec(pod), lambda: "see kubectl's words above",
                      kube.python, "over kubectl exec", {"mount": pod.mount})
    try:
        if made.hello.get("connection") is None:
            raise link.HostError(f"pod {pod.shown}: {pod.mount} is not a FUSE mount there "
                                 f"({made.hello.get('fstype')})")
        remote = made.call("serve_fio")
        if not link.REMOTE_SOCKET.fullmatch(remote):
            raise link.HostError(f"pod {pod.shown}: its fio server socket {remote[:200]!r} is "
                                 "not a plain absolute path")
        local = os.path.join(folder, f"pod{index}-{os.urandom(3).hex()}.sock")
        made.tunnel = tunnel.Tunnel(made.channel.gateway, remote, local, f"pod {pod.shown}")
        made.server = made.tunnel.server
    except BaseException:
        link.link_close(made)
        raise
    return made


def _meter(kube: Kube, pod: Pod, node: str, connection: int, index: int) -> link.Link:
    shown = Pod(pod.name, f"FUSE connection {connection}", pod.namespace, pod.container)
    made = link.start(shown, index, kube.spec(pod), lambda: "see kubectl's words above",
                      kube.python, f"in the measuring pod on node {node}",
                      {"connection": connection})
    try:
        made.call("hold", path=f"{LEASE_DIR}/lease")
    except BaseException:
        link.link_close(made)
        raise
    return made


@contextlib.contextmanager
def reached(pods: Sequence[Pod], kube: Kube, folder: str) -> Iterator[link.Reached]:
    """The clients' links with their fio servers, and one measuring link for each node and
    FUSE connection they use; all closed, the measuring pods deleted, on the way out."""
    if not leftovers.is_private(folder):
        raise link.HostError(f"the pods' sockets need a private directory: {folder} is not a "
                             "0700 directory of this user")
    nodes = [node_of(kube, p) for p in pods]
    opened: list[link.Link] = []
    try:
        for i, p in enumerate(pods):
            opened.append(_client(kube, p, i, folder))
        clients = list(opened)
        keys = [(n, int(c.hello["connection"])) for n, c in zip(nodes, clients, strict=True)]
        order = list(dict.fromkeys(keys))
        namespace = kube.meter_pod.get("metadata", {}).get("namespace") or pods[0].namespace
        with measuring_pods(kube, list(dict.fromkeys(nodes)), namespace) as meter_pods:
            meters = []
            for j, (node, conn) in enumerate(order):
                meters.append(_meter(kube, meter_pods[node], node, conn, len(pods) + j))
                opened.append(meters[-1])
            yield link.Reached(clients, meters, [order.index(k) for k in keys],
                               [f"node {n}" for n, _ in order], "over kubectl exec")
            for made in opened[len(pods):]:  # the measuring pods' agents end before their pods
                link.link_close(made)
            del opened[len(pods):]
    finally:
        for made in opened:
            link.link_close(made)
