"""A one-node Kubernetes cluster, started for the tests and gone after them.

    python3 -m tests.k8s.build        # the binaries, into the cache (once)
    python3 -m tests.k8s.cluster      # start one, show its node, stop it

Everything runs in namespaces of the cluster's own: one holder process (`unshare --net
--pid --mount --fork`) is the PID 1 of a PID namespace, with a network namespace whose only
interfaces are loopback, the node's end of a veth pair (10.213.N.2/30; the host's end .1)
and the pods' bridge (10.214.0.0/24), with no route anywhere else: nothing the cluster runs
can reach past the machine. etcd, kube-apiserver, the controller-manager, the scheduler,
containerd and the kubelet run in it; killing the holder (SIGKILL too) ends every process of
the cluster, the pods' included, and drops their mounts with the mount namespace; the cgroups
runc made (under one parent of the cluster's own) are removed after. The holder dies with the
process that started it, however that dies; the private directory (0700, under /var/tmp: the keys
and tokens, 0600, never on a command line) and the cgroups are in the leftovers record, so a
killed session's are swept by the next.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from pytest_fsperf.infra import leftovers, trust
from pytest_fsperf.infra.procs import Proc
from tests.k8s import images
from tests.k8s.build import BIN, COMPONENTS

SYSTEM = ("etcd", "containerd", "containerd-shim-runc-v2", "runc", "ctr", "unshare", "nsenter", "ip", "gcc", "sh")
SYSTEM_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"  # the PATH each of the cluster's processes gets
CNI_PLUGINS = ("bridge", "host-local", "loopback")  # what containerd runs from CNI, as root
CNI = Path("/usr/lib/cni")
NODE = "fsperf-node"
SERVICES = "10.214.128.0/24"
PODS = "10.214.0.0/24"
CGROUP_CONTROLLERS = ("cpu", "cpuacct", "cpuset", "memory", "devices", "freezer", "blkio", "pids",
                      "systemd", "net_cls", "net_prio", "perf_event", "hugetlb", "rdma", "misc")


_checked: dict[str, str] = {}


def program(name: str) -> str:
    """A component (in BIN) or a system program, as root may run it: its real path, checked
    with its directories and RUNPATH as the plugin checks a daemon's (infra/trust.py)."""
    if name not in _checked:
        found = str(BIN / name) if name in COMPONENTS else shutil.which(name, path=SYSTEM_PATH)
        if found is None or not os.path.isfile(found):
            raise RuntimeError(f"{name} is not installed")
        argv, why = trust.program(found)
        if why or len(argv) != 1:
            raise RuntimeError(f"{name} is not run as root: {why or 'a script'}")
        _checked[name] = argv[0]
    return _checked[name]


def missing() -> list[str]:
    """Why the cluster cannot start on this machine (empty: it can)."""
    lack = []
    for name in (*COMPONENTS, *SYSTEM):
        try:
            program(name)
        except RuntimeError as exc:
            lack.append(str(exc))
    for plugin in CNI_PLUGINS:
        why = trust.untrusted(str(CNI / plugin))
        lack += [f"CNI's {plugin}: {why}"] if why else []
    return lack


def _write(path: Path, text: str, mode: int = 0o600) -> Path:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return path


def _run(name: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run([program(name), *args], capture_output=True, text=True, check=check,
                          env={**os.environ, "PATH": SYSTEM_PATH})


@dataclass
class Cluster:
    dir: Path
    index: int  # N of 10.213.N.0/30 (and of the veth's names)
    holder: subprocess.Popen[bytes] | None = None
    holder_pid: int = 0
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    entry: leftovers.Entry = None  # the directory's, in the leftovers record
    holder_entry: leftovers.Entry = None
    cgroup_entries: list[leftovers.Entry] = field(default_factory=list)

    @property
    def node_ip(self) -> str:
        return f"10.213.{self.index}.2"

    @property
    def host_ip(self) -> str:
        return f"10.213.{self.index}.1"

    @property
    def kubeconfig(self) -> Path:
        return self.dir / "admin.kubeconfig"

    @property
    def cgroup_parent(self) -> str:
        return f"/fsperf-k8s-{self.index}"

    def inside(self, name: str, *args: str) -> list[str]:
        """A program run in the cluster's namespaces (entered by the holder's PID: only while
        its parent, ours, has not reaped it, so the PID names no other process)."""
        if self.holder is None or self.holder.poll() is not None:
            raise RuntimeError("the cluster's namespaces are gone")
        return [program("nsenter"), "-t", str(self.holder_pid), "--net", "--pid", "--mount", "--",
                program(name), *args]

    def kubectl(self, *args: str, check: bool = True, timeout: float = 60, stdin: str | None = None) -> str:
        out = subprocess.run([program("kubectl"), f"--kubeconfig={self.kubeconfig}", *args], input=stdin,
                             capture_output=True, text=True, timeout=timeout)
        if check and out.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)}: {out.stderr.strip()[-500:]}")
        return out.stdout

    def apply(self, *objects: dict[str, object]) -> None:
        """Objects made or changed in the cluster, as JSON documents."""
        self.kubectl("apply", "-f", "-", stdin="\n---\n".join(json.dumps(o) for o in objects))

    def state(self) -> dict[str, object]:
        return {"dir": str(self.dir), "index": self.index, "holder": self.holder_pid,
                "kubeconfig": str(self.kubeconfig), "node_ip": self.node_ip}

    # -- start ---------------------------------------------------------------------------

    def _namespaces(self) -> None:
        self.holder = subprocess.Popen(
            [program("unshare"), "--net", "--pid", "--mount", "--fork", "--kill-child", "--mount-proc",
             "--propagation", "private", "--", program("sh"), "-c", _holder(self.dir)],
            start_new_session=True, stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent,
            env={**os.environ, "PATH": SYSTEM_PATH})
        self.holder_entry = leftovers.note_process(Proc.of(self.holder.pid))  # swept after a SIGKILL
        for _ in range(200):  # the namespaces' PID 1: unshare's child
            children = Path(f"/proc/{self.holder.pid}/task/{self.holder.pid}/children")
            with contextlib.suppress(OSError):
                found = children.read_text().split()
                if found and os.readlink(f"/proc/{found[0]}/exe").endswith("sleep"):
                    self.holder_pid = int(found[0])
                    break
            time.sleep(0.05)
        else:
            raise RuntimeError("the cluster's namespaces did not start")
        host, node = f"fsk{self.index}h", f"fsk{self.index}n"
        _run("ip", "link", "add", host, "type", "veth", "peer", "name", node, "netns", str(self.holder_pid))
        _run("ip", "addr", "add", f"{self.host_ip}/30", "dev", host)
        _run("ip", "link", "set", host, "up")
        for cmd in (("link", "set", "lo", "up"), ("addr", "add", f"{self.node_ip}/30", "dev", node),
                    ("link", "set", node, "up")):
            subprocess.run(self.inside("ip", *cmd), capture_output=True, check=True)

    def _keys(self) -> dict[str, str]:
        """The serving certificate (its CA made here, its key never kept), the service-account
        key pair, and a token a client: each 0600."""
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ec

        from pytest_fsperf.store import tls

        pki = self.dir / "pki"
        pki.mkdir(mode=0o700)
        tls.make(str(pki), "fsperf-k8s", (self.node_ip, SERVICES.rsplit(".", 1)[0] + ".1", "kubernetes",
                                          "kubernetes.default", "kubernetes.default.svc"))
        key = ec.generate_private_key(ec.SECP256R1())
        _write(pki / "sa.key", key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                 serialization.NoEncryption()).decode())
        _write(pki / "sa.pub", key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode())
        users = {"admin": ("admin", "system:masters"), "kubelet": (f"system:node:{NODE}", "system:nodes"),
                 "scheduler": ("system:kube-scheduler", ""), "controller": ("system:kube-controller-manager", "")}
        tokens = {name: secrets.token_hex(24) for name in users}
        _write(pki / "tokens.csv", "".join(f'{tokens[n]},{u},{u},"{g}"\n' for n, (u, g) in users.items()))
        for name, token in tokens.items():
            config = {"apiVersion": "v1", "kind": "Config", "current-context": "fsperf",
                      "clusters": [{"name": "fsperf", "cluster": {
                          "server": f"https://{self.node_ip}:6443", "certificate-authority": str(pki / "ca.pem")}}],
                      "users": [{"name": name, "user": {"token": token}}],
                      "contexts": [{"name": "fsperf", "context": {"cluster": "fsperf", "user": name}}]}
            _write(self.dir / f"{name}.kubeconfig", json.dumps(config))
        return tokens

    def _start(self, name: str, *args: str) -> None:
        log = os.open(self.dir / "logs" / f"{name}.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        try:
            self.procs[name] = subprocess.Popen(self.inside(name, *args), stdin=subprocess.DEVNULL,
                                                stdout=log, stderr=log, start_new_session=True,
                                                env={**os.environ, "PATH": SYSTEM_PATH})
        finally:
            os.close(log)

    def _control_plane(self) -> None:
        pki, d = self.dir / "pki", self.dir
        self._start("etcd", "--name=fsperf", f"--data-dir={d / 'etcd'}",
                    "--listen-client-urls=http://127.0.0.1:2379", "--advertise-client-urls=http://127.0.0.1:2379",
                    "--listen-peer-urls=http://127.0.0.1:2380", "--initial-advertise-peer-urls=http://127.0.0.1:2380",
                    "--initial-cluster=fsperf=http://127.0.0.1:2380", "--log-level=warn")
        self._start("kube-apiserver", "--etcd-servers=http://127.0.0.1:2379",
                    f"--bind-address={self.node_ip}", f"--advertise-address={self.node_ip}", "--secure-port=6443",
                    f"--tls-cert-file={pki / 'cert.pem'}", f"--tls-private-key-file={pki / 'key.pem'}",
                    f"--token-auth-file={pki / 'tokens.csv'}", "--authorization-mode=Node,RBAC",
                    f"--service-cluster-ip-range={SERVICES}", "--allow-privileged=true",
                    "--service-account-issuer=https://kubernetes.default.svc",
                    f"--service-account-key-file={pki / 'sa.pub'}",
                    f"--service-account-signing-key-file={pki / 'sa.key'}",
                    "--kubelet-preferred-address-types=Hostname", "--anonymous-auth=false",
                    "--profiling=false")
        self._wait(lambda: self.kubectl("get", "--raw", "/readyz", check=False, timeout=10).strip() == "ok",
                   120, "kube-apiserver")
        self._start("kube-controller-manager",
                    f"--kubeconfig={d / 'controller.kubeconfig'}", "--leader-elect=false",
                    f"--service-account-private-key-file={pki / 'sa.key'}", f"--root-ca-file={pki / 'ca.pem'}",
                    "--use-service-account-credentials=true", "--bind-address=127.0.0.1", "--profiling=false")
        self._start("kube-scheduler", f"--kubeconfig={d / 'scheduler.kubeconfig'}",
                    "--leader-elect=false", "--bind-address=127.0.0.1", "--profiling=false")

    def _containerd(self) -> None:
        d = self.dir / "containerd"
        d.mkdir(mode=0o700)
        cni = self.dir / "cni"
        cni.mkdir(mode=0o700)
        _write(cni / "10-fsperf.conflist", json.dumps({
            "cniVersion": "0.4.0", "name": "fsperf", "plugins": [{
                "type": "bridge", "bridge": "fsk0", "isGateway": True, "ipMasq": False,
                "ipam": {"type": "host-local", "ranges": [[{"subnet": PODS}]],
                         "dataDir": str(self.dir / "ipam")}}]}), 0o644)
        cri = 'plugins."io.containerd.grpc.v1.cri"'
        _write(d / "config.toml", f"""version = 2
root = "{d / 'root'}"
state = "{d / 'state'}"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs",
  "io.containerd.internal.v1.opt", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = "{self.dir / 'containerd.sock'}"
[ttrpc]
  address = "{self.dir / 'containerd.ttrpc'}"
[{cri}]
  sandbox_image = "{images.PAUSE}"
  enable_selinux = false
  # a score below containerd's own needs CAP_SYS_RESOURCE, which a machine may withhold from root
  # (this one does): runc's nsexec then dies writing the sandbox's -998 ("can't get final child's
  # PID from pipe: EOF"); kept at containerd's own instead
  restrict_oom_score_adj = true
  [{cri}.containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [{cri}.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [{cri}.containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "{self.dir / 'runc'}"
  [{cri}.cni]
    bin_dir = "{CNI}"
    conf_dir = "{cni}"
""")
        self._start("containerd", "--config", str(d / "config.toml"))
        sock = self.dir / "containerd.sock"
        self._wait(sock.exists, 30, "containerd")
        for image in (images.pause_image(self.dir, program("gcc")), images.tools_image(self.dir)):
            _run("ctr", "--address", str(sock), "-n", "k8s.io", "images", "import", str(image))

    def _kubelet(self) -> None:
        d = self.dir / "kubelet"
        d.mkdir(mode=0o700)
        _write(self.dir / "resolv.conf", "", 0o644)
        _write(d / "config.json", json.dumps({
            "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
            "address": "127.0.0.1", "port": 10250, "readOnlyPort": 0, "healthzPort": 0,
            # on the namespace's loopback only (_holder): no one outside the cluster reaches it
            "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False}},
            "authorization": {"mode": "AlwaysAllow"}, "cgroupDriver": "cgroupfs", "cgroupsPerQOS": False,
            "cgroupRoot": self.cgroup_parent, "enforceNodeAllocatable": [], "failCgroupV1": False,
            "failSwapOn": False, "containerRuntimeEndpoint": f"unix://{self.dir / 'containerd.sock'}",
            "resolvConf": str(self.dir / "resolv.conf"), "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99, "maxPods": 30, "registerNode": True,
            "evictionHard": {"memory.available": "10Mi", "nodefs.available": "1%", "imagefs.available": "1%"},
            "localStorageCapacityIsolation": False}))
        self._start("kubelet", f"--config={d / 'config.json'}",
                    f"--kubeconfig={self.dir / 'kubelet.kubeconfig'}", f"--root-dir={d}",
                    f"--node-ip={self.node_ip}", f"--hostname-override={NODE}", "-v=1")
        self._wait(self.ready, 180, "the node")

    def ready(self) -> bool:
        """Ready, and untainted: the node controller lifts not-ready some 20 s after."""
        out = self.kubectl("get", "node", NODE, "-o", "jsonpath={.status.conditions[?(@.type=='Ready')]"
                           ".status} {.spec.taints}", check=False, timeout=10)
        return out.strip() == "True"

    def _cgroups(self) -> None:
        """The pods' parent cgroup in every v1 hierarchy (the kubelet's cgroupRoot), made here:
        the kubelet expects it, runc makes the pods' under it, down() removes them all."""
        for controller in CGROUP_CONTROLLERS:
            root = Path("/sys/fs/cgroup") / controller
            if not root.is_dir() or root.is_symlink():
                continue
            here = root / self.cgroup_parent.lstrip("/")
            self.cgroup_entries.append(leftovers.note_cgroup(str(here)))  # before it exists
            here.mkdir()
            if controller == "cpuset":  # a new cpuset has no CPUs nor memory nodes until given
                for name in ("cpuset.cpus", "cpuset.mems"):
                    (here / name).write_text((root / name).read_text())

    def _wait(self, done: object, timeout: float, what: str) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for name, proc in self.procs.items():
                if proc.poll() is not None:
                    raise RuntimeError(f"{name} exited {proc.returncode}: {self.log_tail(name)}")
            if callable(done) and done():
                return
            time.sleep(0.5)
        raise RuntimeError(f"{what} was not ready after {timeout:.0f} s")

    def log_tail(self, name: str, lines: int = 5) -> str:
        with contextlib.suppress(OSError):
            return " | ".join((self.dir / "logs" / f"{name}.log").read_text().splitlines()[-lines:])
        return "(no log)"

    # -- stop ----------------------------------------------------------------------------

    def down(self) -> list[str]:
        """Everything the cluster made, gone: its namespaces' processes (the holder's SIGKILL
        ends them all), the veth pair, its cgroups, its directory. Returns what could not go."""
        problems: list[str] = []
        if self.holder is not None and self.holder.poll() is None:
            self.holder.kill()
            self.holder.wait()
            leftovers.done(self.holder_entry)
        for _ in range(100):  # the namespaces' PID 1, reaped by the machine's init
            if not Path(f"/proc/{self.holder_pid}").exists():
                break
            time.sleep(0.1)
        else:
            problems.append(f"the cluster's PID 1 ({self.holder_pid}) is still there")
        for proc in self.procs.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
        for _ in range(100):  # the veth pair goes with the namespace; never deleted by name here
            if not os.path.exists(f"/sys/class/net/fsk{self.index}h"):  # (by now another cluster's)
                break
            time.sleep(0.1)
        else:
            problems.append(f"the link fsk{self.index}h is still there")
        stuck = remove_cgroups(self.cgroup_parent)
        if not stuck:
            for entry in self.cgroup_entries:
                leftovers.done(entry)
        problems += stuck
        shutil.rmtree(self.dir, ignore_errors=True)
        if self.dir.exists():
            problems.append(f"{self.dir} could not be removed")
        else:
            leftovers.done(self.entry)
        return problems


# What the holder runs: its mounts shared within its own namespace (a mount pod's Bidirectional
# propagation), and a private tmpfs over each machine-wide place a component writes to without
# being told where (containerd's shim sockets in /run/containerd/s, the pods' network namespaces
# in /run/netns, CNI's results in /var/lib/cni, the kubelet's pki and device plugins in
# /var/lib/kubelet, the pods' logs in /var/log): nothing of theirs is left on the machine.
MASKED = ("/run", "/var/lib", "/var/log")


def _holder(private: Path) -> str:
    """The holder's script. The kubelet listens on the namespace's loopback only, where the
    apiserver reaches it by the node's name (this /etc/hosts, bound over the machine's in the
    cluster's mount namespace): on the node's address a local user could have reached it, and
    its exec (a privileged pod's) with it."""
    hosts = _write(private / "hosts", f"127.0.0.1 localhost {NODE}\n", 0o644)
    return ("mount --make-rshared / && " + " && ".join(
        f"mount -t tmpfs -o mode=0755,size=256m fsperf-k8s {d}" for d in MASKED)
        + f" && mount --bind {hosts} /etc/hosts && exec sleep infinity")


def _die_with_parent() -> None:
    """The holder gets SIGKILL when the process that started it dies, however it dies."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def remove_cgroups(parent: str) -> list[str]:
    """The cluster's cgroups in every v1 hierarchy, deepest first (emptied first)."""
    said = [leftovers.remove_cgroup_tree(f"/sys/fs/cgroup/{c}/{parent.lstrip('/')}") for c in CGROUP_CONTROLLERS]
    return [s for s in said if s and s.startswith("kept")]


def _index() -> int:
    used = {name for name in os.listdir("/sys/class/net")}
    for n in range(1, 250):
        if f"fsk{n}h" not in used and not any(Path(f"/sys/fs/cgroup/{c}/fsperf-k8s-{n}").exists()
                                               for c in ("cpu", "memory")):
            return n
    raise RuntimeError("no free 10.213.N.0/30 for a cluster")


def up() -> Cluster:
    """A cluster, started; its node Ready. The caller calls down()."""
    lack = missing()
    if lack:
        raise RuntimeError(f"the cluster needs {', '.join(lack)}")
    path, entry = leftovers.private_dir("pytest-fsperf-k8s-", "/var/tmp")  # noted before it exists
    cluster = Cluster(Path(path), _index(), entry=entry)
    try:
        (cluster.dir / "logs").mkdir(mode=0o700)
        cluster._namespaces()
        cluster._keys()
        cluster._control_plane()
        cluster._containerd()
        cluster._cgroups()
        cluster._kubelet()
    except BaseException:
        cluster.down()
        raise
    return cluster


def main() -> None:
    started = time.monotonic()
    cluster = up()
    try:
        print(json.dumps({**cluster.state(), "seconds": round(time.monotonic() - started, 1)}))
        print(cluster.kubectl("get", "nodes", "-o", "wide"))
    finally:
        print("\n".join(cluster.down()) or "down: nothing left")


if __name__ == "__main__":
    main()
