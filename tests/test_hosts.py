"""--fsperf-hosts: fio on several hosts at once over SSH, each host's daemon measured there.

The hosts are network namespaces made by the tests (tests/netns_hosts.py): an sshd of their
own on a private test subnet, a key and known host keys made for the test, an s3fs mount
each of one bucket on a MinIO the test started. The namespaces share this machine's /proc,
so each host's daemon can be read here to check what the agent sent."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from pytest_fsperf.errors import UsageError
from pytest_fsperf.hosts.spec import Host, SshSettings, check_python, parse_hosts
from pytest_fsperf.result.daemon import DaemonStats
from pytest_fsperf.store.minio import S3Server, find_minio, start_minio
from pytest_fsperf.store.requests import RequestMeter, difference
from tests.conftest import need, ours, run_json
from tests.netns_hosts import Hosts, juicefs_volume, s3fs_mount, ssh_hosts, unmount, wrong_key

# -- spec: what reaches the ssh command line ------------------------------------------------


@pytest.mark.unit
def test_hosts_are_parsed_with_user_port_and_mount():
    assert parse_hosts("root@h1:/mnt/ossfs2, h2.example.com:2222:/mnt/x/") == (
        Host("h1", "/mnt/ossfs2", "root", None), Host("h2.example.com", "/mnt/x", None, 2222))
    assert parse_hosts("10.0.0.7:/m")[0].destination == "10.0.0.7"


@pytest.mark.unit
@pytest.mark.parametrize(("text", "said"), [
    ("h1", "no absolute mount path"),
    ("-oProxyCommand=sh:/m", "is not a host name"),
    ("root@-h:/m", "is not a host name"),
    ("-u@h:/m", "is not a user name"),
    ("h1:0:/m", "port '0' is not a number"),
    ("h1:/m/../etc", "holds '..'"),
    ("h1:/m,h1:/m", "named twice"),
    ("a b:/m", "is not a host name"),
    ("", "no hosts given"),
])
def test_bad_hosts_are_refused_before_any_ssh(text, said):
    with pytest.raises(ValueError, match=said.replace("(", r"\(").replace(".", r"\.")):
        parse_hosts(text)


@pytest.mark.unit
def test_ssh_refuses_prompts_and_unknown_or_changed_host_keys_whatever_the_config():
    args = SshSettings("/etc/cfg").args(Host("h", "/m", "u", 2200))
    assert args[:2] == ["-F", "/etc/cfg"]
    assert "BatchMode=yes" in args and "StrictHostKeyChecking=yes" in args
    assert args[-2:] == ["-p", "2200"]
    with pytest.raises(ValueError):
        check_python("python3; rm -rf /")


@pytest.mark.unit
def test_hosts_from_a_hosts_file_or_the_ini_file(tmp_path):
    from pytest_fsperf.options.config import BY_NAME
    from pytest_fsperf.options.parse import Raw

    (tmp_path / "hosts").write_text("# the fleet\nroot@n1:/mnt/a  # rack 1\n\nn2:2222:/mnt/a\n")
    convert = BY_NAME["fsperf_hosts"].convert
    found = convert(Raw("@hosts", "fsperf_hosts (ini file)", tmp_path))
    assert [h.shown for h in found] == ["root@n1", "n2:2222"]
    with pytest.raises(UsageError, match=r"fsperf_hosts \(ini file\): the hosts file .*nothing"):
        convert(Raw("@nothing", "fsperf_hosts (ini file)", tmp_path))
    (tmp_path / "bad").write_text("n1\n")
    with pytest.raises(UsageError, match="'n1' is not"):
        convert(Raw("@bad", "fsperf_hosts (ini file)", tmp_path))


def test_bad_host_settings_are_one_line_errors(pytester):
    pytester.makepyfile("def test_x(fsperf):\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--fsperf-hosts=root@h1")
    result.stderr.fnmatch_lines(["*--fsperf-hosts=root@h1 (command line): 'root@h1' is not "
                                 "?USER@?HOST?:PORT?:/MOUNT (no absolute mount path)*"])
    assert result.ret != 0 and "Traceback" not in result.stderr.str()
    result = pytester.runpytest("-p", "no:cacheprovider", "--fsperf-host-python=py thon")
    result.stderr.fnmatch_lines(["*--fsperf-host-python=py thon (command line): 'py thon' is "
                                 "not a command name or path*"])


# -- real hosts: namespaces with sshd, s3fs over MinIO ------------------------------------

@pytest.fixture
def store(minio: None) -> Iterator[S3Server]:
    need("s3fs")
    need("ssh")
    if not os.path.exists("/usr/sbin/sshd"):
        pytest.skip("sshd is not installed (apt-get install openssh-server)")
    server = start_minio(find_minio() or "minio")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def local_mount(tmp_path: Path, store: S3Server) -> Iterator[Path]:
    """This machine's own s3fs mount of the bucket: the test's work dir lives there."""
    passwd = tmp_path / "passwd-local"
    passwd.write_text(f"{store.access_key}:{store.secret_key}\n")
    passwd.chmod(0o600)
    point = tmp_path / "local"
    s3fs_mount(store, point, passwd)
    try:
        yield point
    finally:
        unmount(point)


def host_args(hosts: Hosts, local: Path, n: int | None = None) -> list[str]:
    return [f"--fsperf-mount={local}", f"--fsperf-hosts={hosts.option(n)}",
            f"--fsperf-ssh-config={hosts.config}", f"--fsperf-host-python={sys.executable}"]


def agents_left() -> list[str]:
    """What the hosts' side may leave: agents, fio servers, ssh forwards, their sockets' dirs."""
    found = []
    for p in psutil.process_iter(["cmdline"]):
        cmd = " ".join(p.info["cmdline"] or ())
        if ("pytest_fsperf.hosts.agent" in cmd or ("fio" in cmd and "--server=sock:" in cmd)
                or (os.path.basename(cmd.split(" ", 1)[0]) == "ssh" and " -L " in cmd)):
            found.append(cmd)
    return found + [str(p) for p in Path("/tmp").glob("pytest-fsperf-host-*")]


def nothing_of_ours(store: S3Server) -> bool:
    """No mount or process the plugin made is left (the test's own MinIO aside)."""
    mounts, procs = ours()
    return mounts == [] and all(p.startswith(f"{store.proc.pid}: ") for p in procs)


def check_rows(row: dict, n: int) -> None:
    clients = row["clients"]
    assert len(clients) == n
    total = row["read"]
    summed = sum(c["read"]["bw_bytes"] for c in clients)
    assert abs(total["bw_bytes"] - summed) <= 0.03 * summed, (total["bw_bytes"], summed)
    assert total["io_bytes"] == sum(c["read"]["io_bytes"] for c in clients)
    assert len({c["daemon"]["pid"] for c in clients}) == n  # each host its own daemon
    assert all(c["host"].startswith("root@fsperf-host") for c in clients)
    assert all(c["cold_read"] == "verified" for c in clients), [c["cold_evidence"] for c in clients]
    assert row["cold_read"] == "verified"
    assert any("windows started within" in note for note in row["notes"])
    # s3fs keeps no count of its own requests: each host's row says so, none pretends
    assert all(c["requests"] is None and "keeps no count" in c["requests_note"]
               for c in clients), [c["requests_note"] for c in clients]


INNER = """
import glob, json, os, subprocess, threading, time
import psutil
from pytest_fsperf import fsperf
from tests.netns_hosts import daemon_cpu_ticks

MOUNTS = {mounts!r}

def listeners():
    return sorted({{(c.laddr.ip, c.laddr.port) for c in psutil.net_connections("tcp")
                    if c.status == psutil.CONN_LISTEN}})

def nobody_connects(path):
    code = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                           "python3", "-c", "import socket,sys; s=socket.socket(socket.AF_UNIX); "
                           "s.connect(sys.argv[1])", path], capture_output=True).returncode
    return code == 0

def forwarded():
    found = []
    for p in psutil.process_iter(["cmdline"]):
        cmd = p.info["cmdline"] or []
        if cmd and os.path.basename(cmd[0]) == "ssh" and "-L" in cmd:  # run by its real path
            found.append(cmd[cmd.index("-L") + 1].split(":", 1)[0])
    return found

def during(found):
    for _ in range(300):  # the sockets of the hosts' fio servers, and ours forwarded to them
        remote, local = glob.glob("/tmp/pytest-fsperf-host-*/fio-*.sock"), forwarded()
        if len(remote) == len(MOUNTS) and len(local) == len(MOUNTS):
            break
        time.sleep(0.05)
    found["sockets"] = remote + local
    found["nobody"] = [p for p in remote + local if nobody_connects(p)]
    found["during"] = listeners()

def test_hosts(fsperf):
    found = {{"before": listeners()}}
    job = dict(rw="read", bs="1M", size="32M", direct=1, time_based=1, runtime="3s", numjobs=2)
    fsperf.fio(name="prep", judged=False, **job)  # the files in place: the next layout is a no-op
    ticks0 = [daemon_cpu_ticks(m) for m in MOUNTS]
    fsperf.cold()
    watcher = threading.Thread(target=during, args=(found,))
    watcher.start()
    r = fsperf.fio(name="r", **job)
    ticks1 = [daemon_cpu_ticks(m) for m in MOUNTS]
    watcher.join()
    found["proc_cpu"] = [(b - a) / os.sysconf("SC_CLK_TCK") for a, b in zip(ticks0, ticks1)]
    found["agent_cpu"] = [c.daemon.cpu_seconds for c in r.clients]
    with open("checks.json", "w") as f:
        json.dump(found, f)

@fsperf(max_cpu="0.5%", max_rss="100GB")
def test_limits(fsperf):
    fsperf.fio(name="w", rw="write", bs="1M", size="8M", time_based=1, runtime="2s")
"""


@pytest.mark.parametrize("n", [2, 4])
def test_hosts_each_daemon_measured_there(pytester, tmp_path, store, local_mount, n):
    with ssh_hosts(tmp_path / "hosts", n, store) as hosts:
        pytester.makepyfile(INNER.format(mounts=[str(h.mount) for h in hosts.hosts]))
        pytester.syspathinsert(Path(__file__).parent.parent)
        result, doc = run_json(pytester, "-s", *host_args(hosts, local_mount))
        result.assert_outcomes(passed=1, failed=1)
        row = next(r for r in doc["results"] if r["name"] == "r")
        check_rows(row, n)
        # a daemon limit holds on every host's daemon, each named
        result.stdout.fnmatch_lines([f"*w on host root@fsperf-host{i}: daemon CPU *% > max_cpu 0.5%*"
                                     for i in range(n)], consecutive=False)
        checks = json.loads((pytester.path / "checks.json").read_text())
        for theirs, ours_ in zip(checks["proc_cpu"], checks["agent_cpu"], strict=True):
            # the agent's window lies inside the test's two readings of /proc
            assert ours_ <= theirs + 0.02 and ours_ >= 0.85 * theirs - 0.02, (theirs, ours_)
        assert checks["during"] == checks["before"]  # no TCP listener of ours
        assert len(checks["sockets"]) == 2 * n and checks["nobody"] == []  # no one else connects
        assert [c.pid for c in psutil.Process().children()  # every ssh reaped, no zombie
                if c.status() == psutil.STATUS_ZOMBIE] == []
        assert agents_left() == []
        assert nothing_of_ours(store)


def forwards_up(n: int) -> bool:
    return sum(1 for p in psutil.process_iter(["cmdline"])
               if " -L " in " ".join(p.info["cmdline"] or ())) >= n


def wait_until(check: Callable[[], object], seconds: float, left: Callable[[], object] = str
               ) -> None:
    """Until check() holds; on a timeout, say what `left()` still finds."""
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"timed out after {seconds} s: {left()}"
        time.sleep(0.1)


def first_fails_next_passes(pytester: pytest.Pytester, hosts: Hosts, local: Path,
                            store: S3Server, said: str) -> None:
    """The session's first test fails with `said`, the next passes on the first host; then
    nothing is left on any host or here."""
    result, _doc = run_json(pytester, *host_args(hosts, local))
    result.assert_outcomes(passed=1, failed=1)  # the session went on
    result.stdout.fnmatch_lines([said])
    wait_until(lambda: agents_left() == [], 10, agents_left)
    assert nothing_of_ours(store)


def test_a_host_with_a_changed_key_is_refused(pytester, tmp_path, store, local_mount):
    with ssh_hosts(tmp_path / "hosts", 2, store) as hosts:
        wrong_key(hosts, 1)
        pytester.makepyfile("""
            def test_refused(fsperf):
                fsperf.fio(rw="read", bs="1M", size="4M")

            def test_next(fsperf):
                fsperf.fio(rw="read", bs="1M", size="4M", clients=1)  # the first host only
        """)
        first_fails_next_passes(pytester, hosts, local_mount, store,
                                "*host root@fsperf-host1: could not start the agent over ssh: "
                                "Host key verification failed*")


def test_a_host_that_drops_out_mid_run_fails_the_test_naming_it(pytester, tmp_path, store,
                                                                local_mount):
    with ssh_hosts(tmp_path / "hosts", 2, store) as hosts:
        pytester.makepyfile("""
            def test_dropped(fsperf):
                fsperf.fio(rw="write", bs="256k", size="16M", time_based=1, runtime="8s")

            def test_next(fsperf):
                fsperf.fio(rw="write", bs="1M", size="4M", clients=1)  # the host still up
        """)

        def kill_host() -> None:
            wait_until(lambda: forwards_up(2), 60)
            time.sleep(2.5)  # mid-run
            hosts.hosts[1].kill()

        killer = threading.Thread(target=kill_host)
        killer.start()
        # the dead host's leftovers are swept by the next agent on that machine
        first_fails_next_passes(pytester, hosts, local_mount, store,
                                "*host root@fsperf-host1 dropped out during the run (fio's "
                                "controller failed*")
        killer.join()


def test_each_host_counts_its_own_requests_where_its_daemon_does(pytester, tmp_path, store):
    """JuiceFS counts its object requests (.stats): each host's row holds its daemon's
    count, the aggregate their sum; this machine's own JuiceFS client, which did none of
    the work, is not counted. The store saw at least those PUTs."""
    need("juicefs")
    volume = juicefs_volume(store, tmp_path)
    local = tmp_path / "local"
    volume.mount(local)
    try:
        with ssh_hosts(tmp_path / "hosts", 2, store, volume) as hosts:
            pytester.makepyfile("""
                def test_w(fsperf):
                    fsperf.fio(name="w", rw="write", bs="1M", size="16M", end_fsync=1)
            """)
            meter = RequestMeter(store.endpoint)
            before = meter.read()
            result, doc = run_json(pytester, *host_args(hosts, local))
            seen = difference(before, meter.read())
        result.assert_outcomes(passed=1)
        (row,) = doc["results"]
        each = [c["requests"] for c in row["clients"]]
        assert all(q is not None and q["by_kind"]["PUT"] > 0 for q in each), row["clients"]
        assert row["requests"]["source"] == "JuiceFS .stats on each host"
        assert row["requests"]["total"] == sum(q["total"] for q in each)
        assert row["requests"]["by_kind"]["PUT"] == sum(q["by_kind"]["PUT"] for q in each)
        assert 0 < row["requests"]["by_kind"]["PUT"] <= seen.by_kind["PUT"]
        result.stdout.fnmatch_lines(["*requests: the object requests each client's daemon "
                                     "counted itself*"])
    finally:
        volume.unmount(local)


# How long a host may take to clear up after the controller dies: execnet's worker waits
# 5 s for the agent to end, interrupts it, waits 10 s more and exits; the agent's watchdog
# then stops what is left (3 s grace, then SIGKILL).
CLEARED_WITHIN = 45.0


def cleared(store: S3Server) -> list[tuple[float, list[str]]]:
    """Poll until nothing of the hosts' side or of ours is left; what was left, when."""
    t0, seen = time.monotonic(), []
    while time.monotonic() - t0 < CLEARED_WITHIN:
        left = agents_left() + [str(p) for p in ours()[1]
                                 if not p.startswith(f"{store.proc.pid}: ")] + ours()[0]
        seen.append((round(time.monotonic() - t0, 1), left))
        if not left:
            break
        time.sleep(0.5)
    return seen


@pytest.mark.parametrize("when", ["connecting", "mid-run"])
def test_nothing_is_left_on_any_host_after_pytest_is_killed(pytester, tmp_path, store,
                                                             local_mount, when):
    with ssh_hosts(tmp_path / "hosts", 2, store) as hosts:
        pytester.makepyfile("""
            def test_long(fsperf):
                fsperf.fio(rw="write", bs="256k", size="16M", time_based=1, runtime="30s")
        """)
        proc = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                                 *host_args(hosts, local_mount)], cwd=pytester.path,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            if when == "connecting":  # the first host linked, the second on its way
                wait_until(lambda: forwards_up(1), 60)
            else:
                wait_until(lambda: forwards_up(2), 60)
                time.sleep(2)
                assert agents_left()  # the run is on
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        seen = cleared(store)
        print(f"cleared in {seen[-1][0]} s")
        assert seen[-1][1] == [], "\n".join(f"{t} s: {left}" for t, left in seen[::4])


# -- thresholds: a daemon limit holds on every host's daemon ------------------------------

def _daemon(cpu_percent: float, rss: int) -> DaemonStats:
    return DaemonStats(pid=1, wall_seconds=3.0, cpu_seconds=cpu_percent * 0.03,
                       cpu_percent=cpu_percent, peak_rss_bytes=rss, peak_rss_method="VmHWM",
                       read_bytes=0, write_bytes=0, cpu_window="I/O", cpu_window_seconds=3.0)


@pytest.mark.unit
def test_daemon_limits_hold_on_each_host_not_on_their_sum():
    from pytest_fsperf.judge import judge
    from pytest_fsperf.plan.marker import build_plan
    from pytest_fsperf.result.parts import ClientStats
    from pytest_fsperf.result.workload import WorkloadResult
    from pytest_fsperf.vocab import Outcome

    rows = tuple(ClientStats(f"host h{i}", f"/m/w/client{i}", None, None, d, "", f"root@h{i}")
                 for i, d in enumerate([_daemon(120.0, 1 << 30), _daemon(80.0, 3 << 30),
                                        None]))
    rows = (*rows[:2], dataclasses.replace(rows[2], daemon_note="on root@h2: daemon not found"))
    summed = _daemon(200.0, 4 << 30)  # more than either limit: judged per host, it is not
    r = WorkloadResult(test="t", name="r", kind="fio", options={}, cache="dropped",
                       daemon_cache="n/a", read=None, write=None, daemon=summed, daemon_note="",
                       wall_seconds=3.0, tool_cpu_percent=0.0, clients=rows)
    v = judge(build_plan("t", [((), {"max_cpu": "150%", "max_rss": "2GB"})]), [r])
    assert v.failures == ["r on host root@h1: daemon peak memory 3221 MB > max_rss 2GB"]
    assert v.per_workload["r"] == Outcome.FAIL
    assert any("max_cpu not judged on host root@h2 (on root@h2: daemon not found)" in n
               for n in v.notes)
    # without hosts the same figures are one machine's daemons: their sum is judged
    local = dataclasses.replace(r, clients=tuple(dataclasses.replace(c, host="") for c in rows))
    v = judge(build_plan("t", [((), {"max_cpu": "150%"})]), [local])
    assert v.failures and v.failures[0].startswith("r: ")


@pytest.mark.unit
def test_an_ssh_config_another_user_can_change_is_refused(tmp_path):
    """ssh does not check the permissions of a -F file, and runs its ProxyCommand: as
    `nobody`, appending one to a world-writable config ran `id` as root (uid=0)."""
    from pytest_fsperf.options.config import BY_NAME
    from pytest_fsperf.options.parse import Raw

    convert = BY_NAME["fsperf_ssh_config"].convert
    cfg = tmp_path / "cfg"
    cfg.write_text("Host h\n  HostName 127.0.0.1\n")
    cfg.chmod(0o600)
    assert convert(Raw(str(cfg), "--fsperf-ssh-config (command line)", tmp_path)) == cfg
    for path, mode in ((cfg, 0o666), (tmp_path, 0o777)):  # the file, or the directory holding it
        path.chmod(mode)
        with pytest.raises(UsageError, match="can be changed by another user"):
            convert(Raw(str(cfg), "--fsperf-ssh-config (command line)", tmp_path))
        path.chmod(0o600 if path == cfg else 0o700)


HOSTS_THEN_KILLED = """
import os, subprocess, time
from pathlib import Path
from tests.netns_hosts import Volume, ssh_hosts

class NoStore:  # the hosts' volume is a tmpfs: no MinIO needed
    access_key, secret_key = "k", "s"

def tmpfs(point):
    point.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "fsperf-test", str(point)], check=True)

def test_hosts_then_killed(tmp_path):
    with ssh_hosts(tmp_path / "h", 2, NoStore(), Volume(tmpfs, lambda p: None)) as hosts:
        made = [(h.netns, h.sshd.pid, str(h.mount)) for h in hosts.hosts]
        Path({ready!r}).write_text(repr(made))
        time.sleep(120)
"""


def test_the_test_suites_hosts_are_removed_after_its_run_is_killed(pytester, tmp_path):
    """As found: SIGKILL of a tests/test_hosts.py run left 2 network namespaces, 2 veth
    pairs, 2 root `sshd -D` reachable on their addresses, and the hosts' mounts. The hosts
    are now in the session's record: its watchdog removes them as it does the plugin's."""
    need("ssh")
    if not os.path.exists("/usr/sbin/sshd") or os.geteuid() != 0:
        pytest.skip("needs root and sshd (apt-get install openssh-server)")
    ready = tmp_path / "ready"
    pytester.makepyfile(HOSTS_THEN_KILLED.format(ready=str(ready)))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    # the plugin's own suite always uses the plugin (tests/conftest.py): so does this one
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-s", "--fsperf-scale=1"],
                            cwd=pytester.path, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        wait_until(ready.exists, 60)
    finally:
        proc.send_signal(signal.SIGKILL)  # the test's own pytest
        proc.wait()
    made = eval(ready.read_text())

    def left() -> list[str]:
        mounted = {m.mountpoint for m in psutil.disk_partitions(all=True)}
        return ([f"netns {ns}" for ns, _p, _m in made if os.path.exists(f"/run/netns/{ns}")]
                + [f"sshd {pid}" for _n, pid, _m in made if psutil.pid_exists(pid)
                   and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]
                + [f"mount {m}" for _n, _p, m in made if m in mounted])
    wait_until(lambda: not left(), 30, left)
