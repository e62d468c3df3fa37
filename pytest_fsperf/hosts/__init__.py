"""Clients on other hosts, reached over SSH with execnet (the engine pytest-xdist uses):
on each host the pytest-free measuring core runs (agent.py: its daemon found from its
mount, cold start, meters over the window) beside a fio server on a unix socket in a
0700 directory there; this machine's fio controller reaches each server through an SSH
forward to a socket in its own 0700 directory (link.py). Nothing listens on a TCP port."""

from pytest_fsperf.hosts.spec import Host, SshSettings, parse_hosts

__all__ = ["Host", "SshSettings", "parse_hosts"]
