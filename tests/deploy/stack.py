"""Docker for tests/deploy: the tools, the daemon, the images and a compose
project on the host's network.

No image registry is reachable on CI machines: the base image is Debian
bookworm made with `debootstrap` and `docker import` (with python3-venv, as the
Dockerfile's BASE_IMAGE needs), PostgreSQL and Redis are the stand-ins of
deploy/test-images/, and pip reaches its index through the machine's CA
bundle, which goes into the build as a BuildKit secret.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from tests.conftest import REPO, require

BASE_IMAGE = "concord-test/bookworm-python:latest"
POSTGRES_IMAGE = "concord-test/postgres:latest"
REDIS_IMAGE = "concord-test/redis:latest"
APP_IMAGE = "concord-test/concord:latest"
DEBIAN_MIRROR = os.environ.get("CONCORD_DEBIAN_MIRROR", "http://deb.debian.org/debian")
HOST_NETWORK_OVERRIDE = REPO / "tests" / "deploy" / "compose.host-network.yaml"


def phase(name: str, started: float) -> None:
    print(f"[containers] {name}: {time.monotonic() - started:.1f} s", flush=True)


def run(
    args: list[str], *, timeout: float = 600, env: dict | None = None, check: bool = True, **kw
) -> subprocess.CompletedProcess:
    result = subprocess.run(
        args, capture_output=True, text=True, timeout=timeout, env=env, check=False, **kw
    )
    if check and result.returncode != 0:
        raise AssertionError(
            f"{' '.join(args)} exited {result.returncode}:\n{result.stdout[-4000:]}\n"
            f"{result.stderr[-4000:]}"
        )
    return result


def buildkit_cli() -> str | None:
    """A docker CLI that builds with BuildKit secrets: one with buildx, or one
    (Debian's 20.10) whose built-in BuildKit DOCKER_BUILDKIT=1 turns on."""
    candidates = [shutil.which("docker"), "/usr/bin/docker", "/usr/local/bin/docker"]
    for cli in dict.fromkeys(c for c in candidates if c and os.access(c, os.X_OK)):
        probe = run(
            [cli, "build", "--help"],
            env=os.environ | {"DOCKER_BUILDKIT": "1"},
            check=False,
            timeout=30,
        )
        if probe.returncode == 0 and "--secret" in probe.stdout:
            return cli
    return None


def compose_cli(docker: str) -> list[str] | None:
    """`docker compose` (v2) when the CLI has it, else Debian's docker-compose (v1)."""
    if run([docker, "compose", "version"], check=False, timeout=30).returncode == 0:
        return [docker, "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    return None


def ca_bundle() -> Path | None:
    """The CA bundle pip uses on this machine (pip's `cert`, SSL_CERT_FILE)."""
    for name in ("PIP_CERT", "SSL_CERT_FILE"):
        if os.environ.get(name) and Path(os.environ[name]).is_file():
            return Path(os.environ[name])
    config = run(
        [sys.executable, "-m", "pip", "config", "get", "global.cert"], check=False, timeout=30
    )
    if config.returncode == 0 and Path(config.stdout.strip()).is_file():
        return Path(config.stdout.strip())
    return None


@dataclass
class Docker:
    cli: str
    compose: list[str]
    daemon: subprocess.Popen | None = None  # the dockerd this test started, if any
    env: dict = field(default_factory=lambda: os.environ | {"DOCKER_BUILDKIT": "1"})

    def __call__(self, *args: str, timeout: float = 600, **kw) -> subprocess.CompletedProcess:
        return run([self.cli, *args], timeout=timeout, env=self.env, **kw)

    def has_image(self, name: str) -> bool:
        return self("image", "inspect", name, check=False, timeout=60).returncode == 0

    def answers(self) -> bool:
        return self("info", check=False, timeout=30).returncode == 0


@contextmanager
def docker_daemon(tmp: Path) -> Iterator[Docker]:
    """The docker tools and a daemon: the running one, or a dockerd started here
    (and stopped afterwards). Skips (fails in CI) when either cannot be had."""
    cli = buildkit_cli()
    require(cli is not None, "no docker CLI that builds with BuildKit (apt-get install docker.io)")
    assert cli is not None
    compose = compose_cli(cli)
    require(compose is not None, "no docker compose (apt-get install docker-compose)")
    assert compose is not None
    docker = Docker(cli, compose)
    if not docker.answers():
        dockerd = shutil.which("dockerd") or "/usr/sbin/dockerd"
        require(os.access(dockerd, os.X_OK), "no docker daemon answers and dockerd is missing")
        require(os.geteuid() == 0, "no docker daemon answers and dockerd needs root")
        log = (tmp / "dockerd.log").open("wb")
        docker.daemon = subprocess.Popen(
            [dockerd], stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = time.monotonic() + 60
        while not docker.answers() and docker.daemon.poll() is None:
            if time.monotonic() > deadline:
                break
            time.sleep(1)
        if not docker.answers():
            stop_daemon(docker)
            tail = (tmp / "dockerd.log").read_text(errors="replace")[-2000:]
            require(False, f"dockerd did not start:\n{tail}")
    try:
        yield docker
    finally:
        stop_daemon(docker)


def stop_daemon(docker: Docker) -> None:
    if docker.daemon is not None and docker.daemon.poll() is None:
        docker.daemon.terminate()
        try:
            docker.daemon.wait(timeout=60)
        except subprocess.TimeoutExpired:
            docker.daemon.kill()
            docker.daemon.wait()


def ensure_base_image(docker: Docker, tmp: Path) -> None:
    """Debian bookworm with python3-venv, from Debian's packages (kept between
    runs: made again only when the image is missing)."""
    if docker.has_image(BASE_IMAGE):
        print(f"[containers] base image {BASE_IMAGE} already there", flush=True)
        return
    debootstrap = shutil.which("debootstrap") or "/usr/sbin/debootstrap"
    require(os.access(debootstrap, os.X_OK), "debootstrap is missing (apt-get install debootstrap)")
    rootfs = tmp / "rootfs"
    run(
        [
            debootstrap,
            "--variant=minbase",
            "--include=python3,python3-venv",
            "bookworm",
            str(rootfs),
            DEBIAN_MIRROR,
        ],
        timeout=900,
    )
    for deb in (rootfs / "var/cache/apt/archives").glob("*.deb"):
        deb.unlink()
    tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
    docker("import", "-", BASE_IMAGE, stdin=tar.stdout, timeout=600)
    assert tar.wait() == 0
    shutil.rmtree(rootfs)


def build(docker: Docker, tag: str, context: Path, *args: str) -> None:
    docker(
        "build",
        "--network",
        "host",
        "--progress",
        "plain",
        "--build-arg",
        f"BASE_IMAGE={BASE_IMAGE}",
        "-t",
        tag,
        *args,
        str(context),
        timeout=1800,
    )


def build_images(docker: Docker, ca: Path | None) -> None:
    build(docker, POSTGRES_IMAGE, REPO / "deploy" / "test-images" / "postgres")
    build(docker, REDIS_IMAGE, REPO / "deploy" / "test-images" / "redis")
    secret = ["--secret", f"id=ca,src={ca}"] if ca else []
    build(docker, APP_IMAGE, REPO, "--target", "web", *secret)


def layers_holding(docker: Docker, image: str, content: bytes) -> list[str]:
    """The files of the image's own layers (not its base image's) whose bytes are
    `content`, and any file under run/secrets/: where a secret would have leaked."""
    base_layers = len(json.loads(docker("inspect", BASE_IMAGE).stdout)[0]["RootFS"]["Layers"])
    digest = hashlib.sha256(content).hexdigest()
    found = []
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "image.tar"
        docker("save", "-o", str(archive), image, timeout=900)
        with tarfile.open(archive) as outer:
            manifest = json.load(outer.extractfile("manifest.json"))  # type: ignore[arg-type]
            for layer in manifest[0]["Layers"][base_layers:]:
                with tarfile.open(fileobj=outer.extractfile(layer), mode="r|*") as inner:
                    for member in inner:
                        if member.name.lstrip("./").startswith("run/secrets/"):
                            found.append(f"{layer}: {member.name}")
                        elif member.isfile() and member.size == len(content):
                            data = inner.extractfile(member).read()  # type: ignore[union-attr]
                            if hashlib.sha256(data).hexdigest() == digest:
                                found.append(f"{layer}: {member.name}")
    return found


@dataclass
class Stack:
    """A compose project of compose.yaml on the host's network, on free ports."""

    docker: Docker
    project: str
    env: dict
    config: Path  # compose.yaml with the override, interpolated: one file

    @property
    def web_port(self) -> int:
        return int(self.env["CONCORD_TEST_WEB_PORT"])

    def compose(self, *args: str, timeout: float = 600, **kw) -> subprocess.CompletedProcess:
        return run(
            [
                *self.docker.compose,
                "-p",
                self.project,
                "--project-directory",
                str(REPO),
                "-f",
                str(self.config),
                *args,
            ],
            env=self.env,
            timeout=timeout,
            **kw,
        )

    def manage(self, *args: str, timeout: float = 300) -> str:
        """manage.py in the web container."""
        return self.compose(
            "exec", "-T", "web", "python", "manage.py", *args, timeout=timeout
        ).stdout

    def containers(self) -> list[dict]:
        ids = self.docker(
            "ps", "-aq", "--filter", f"label=com.docker.compose.project={self.project}"
        ).stdout.split()
        return json.loads(self.docker("inspect", *ids).stdout) if ids else []

    def wait_healthy(self, timeout: float = 300) -> None:
        """Every service up and healthy, the migration container exited 0."""
        deadline = time.monotonic() + timeout
        while True:
            states = {}
            for container in self.containers():
                service = container["Config"]["Labels"]["com.docker.compose.service"]
                state = container["State"]
                health = (state.get("Health") or {}).get("Status", "")
                states[service] = f"{state['Status']}/{state['ExitCode']}/{health}"
                if state["Status"] == "exited" and (service != "migrate" or state["ExitCode"]):
                    raise AssertionError(f"{service} exited:\n{self.logs(service)}")
            ready = [
                s == "migrate" and v.startswith("exited/0/") or v == "running/0/healthy"
                for s, v in states.items()
            ]
            if len(states) >= 7 and all(ready):
                return
            if time.monotonic() > deadline:
                logs = "\n".join(self.logs(s)[-1500:] for s in states)
                raise AssertionError(f"not healthy after {timeout} s: {states}\n{logs}")
            time.sleep(2)

    def logs(self, service: str) -> str:
        return self.compose("logs", "--no-color", service, check=False, timeout=60).stdout


def free_ports(count: int) -> list[int]:
    import socket

    sockets = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def host_network_config(docker: Docker, env: dict, target: Path) -> None:
    """compose.yaml with tests/deploy/compose.host-network.yaml, interpolated into
    one file, less the published ports (which the host's network has no use
    for, and which Docker refuses beside it)."""
    merged = run(
        [
            *docker.compose,
            "--project-directory",
            str(REPO),
            "-f",
            str(REPO / "compose.yaml"),
            "-f",
            str(HOST_NETWORK_OVERRIDE),
            "config",
        ],
        env=env,
        timeout=60,
    ).stdout
    config = yaml.safe_load(merged)
    for service in config["services"].values():
        if service.get("network_mode") == "host":
            service.pop("ports", None)
            service.pop("networks", None)
    target.write_text(yaml.safe_dump(config, sort_keys=False))
    target.chmod(0o600)  # it holds the test's (throw-away) secrets
