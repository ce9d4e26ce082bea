"""Hosts as Linux network namespaces on one private bridge, for the cluster
rehearsal (tests/cluster/rehearsal.py).

One namespace holds the switch (`<tag>-hub`, a bridge with no address); every
host is a namespace of its own with an `eth0` whose peer is a port of that
bridge, and an address of the rehearsal's own /24 (10.231.X.0/24, X from the
tag). Nothing is added to the machine's own namespace: no address, no route.
Cutting a host sets its switch port down: the host keeps running and keeps
its address and routes, but nothing it sends arrives and nothing reaches it
(a pulled cable, not a clean stop).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field

PREFIX = "ccl"  # every namespace and switch port the rehearsal makes starts so


def run_ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


def unavailable() -> str:
    """Why namespaces cannot be made here ("" when they can)."""
    if os.geteuid() != 0:
        return "the cluster rehearsal makes network namespaces: it needs root"
    if shutil.which("ip") is None:
        return "the ip command (iproute2) is not installed"
    probe = f"{PREFIX}probe{os.getpid() % 10000}"
    made = run_ip("netns", "add", probe, check=False)
    if made.returncode != 0:
        return f"ip netns does not work here: {made.stderr.strip()}"
    try:
        bridge = run_ip("-n", probe, "link", "add", "br0", "type", "bridge", check=False)
        if bridge.returncode != 0:
            return f"no bridge can be made in a namespace: {bridge.stderr.strip()}"
    finally:
        run_ip("netns", "del", probe, check=False)
    return ""


@dataclass
class Topology:
    """`hosts`: name -> last octet of its address."""

    tag: str
    hosts: dict[str, int]
    subnet: str = ""
    made: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.subnet:
            self.subnet = f"10.231.{int(self.tag, 16) % 250 + 2}"

    @property
    def hub(self) -> str:
        return f"{PREFIX}{self.tag}-hub"

    def namespace(self, host: str) -> str:
        return f"{PREFIX}{self.tag}-{host}"

    def port(self, host: str) -> str:
        """The host's port on the switch (at most 15 characters)."""
        return f"{PREFIX}{self.tag}p{self.hosts[host]}"

    def address(self, host: str) -> str:
        return f"{self.subnet}.{self.hosts[host]}"

    def up(self) -> None:
        run_ip("netns", "add", self.hub)
        self.made.append(self.hub)
        run_ip("-n", self.hub, "link", "add", "br0", "type", "bridge")
        run_ip("-n", self.hub, "link", "set", "br0", "up")
        for host in self.hosts:
            namespace = self.namespace(host)
            run_ip("netns", "add", namespace)
            self.made.append(namespace)
            port = self.port(host)
            run_ip(
                "-n", self.hub, "link", "add", port, "type", "veth",
                "peer", "name", "eth0", "netns", namespace,
            )  # fmt: skip
            run_ip("-n", self.hub, "link", "set", port, "master", "br0", "up")
            run_ip("-n", namespace, "addr", "add", f"{self.address(host)}/24", "dev", "eth0")
            run_ip("-n", namespace, "link", "set", "eth0", "up")
            run_ip("-n", namespace, "link", "set", "lo", "up")

    def exec_args(self, host: str) -> list[str]:
        """The command prefix that runs a program on `host`."""
        return ["ip", "netns", "exec", self.namespace(host)]

    def cut(self, host: str) -> None:
        run_ip("-n", self.hub, "link", "set", self.port(host), "down")

    def restore(self, host: str) -> None:
        run_ip("-n", self.hub, "link", "set", self.port(host), "up")

    def down(self) -> None:
        remove(self.made)
        self.made = []


def pids_in(namespace: str) -> list[int]:
    """The processes in a namespace, this one left out (the rehearsal runs in
    its `ctl` namespace)."""
    listed = run_ip("netns", "pids", namespace, check=False)
    return [int(pid) for pid in listed.stdout.split() if int(pid) != os.getpid()]


def remove(namespaces: list[str]) -> None:
    """Stop whatever still runs in these namespaces (only the rehearsal starts
    processes there), then delete them (their veths go with them)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        alive = [pid for namespace in namespaces for pid in pids_in(namespace)]
        for pid in alive:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + 10
        while alive and time.monotonic() < deadline:
            alive = [pid for namespace in namespaces for pid in pids_in(namespace)]
            time.sleep(0.2)
        if not alive:
            break
    for namespace in namespaces:
        run_ip("netns", "del", namespace, check=False)


def remove_tagged(tag: str) -> list[str]:
    """Delete every namespace of a rehearsal's tag (after a rehearsal that was
    itself killed); returns their names."""
    listed = run_ip("netns", "list", check=False).stdout.split("\n")
    mine = [line.split()[0] for line in listed if line.startswith(f"{PREFIX}{tag}-")]
    remove(mine)
    return mine
