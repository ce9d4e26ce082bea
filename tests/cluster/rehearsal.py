"""The cluster rehearsal: Concord as separate hosts that lose one of them.

Hosts (network namespaces on one bridge, tests/cluster/network.py): `db`
(a throwaway PostgreSQL cluster), `broker` (a redis-server of its own), `api`
(the fake OpenAI server, with latency), `web` (gunicorn), `llm1` and `llm2`
(Celery workers on the `llm` queue), `default` (a worker on `default`),
`beat` (celery beat), and `ctl`, where this process runs once the hosts are
made (it starts the run through the web host's API and watches). Every
process reaches the others by their addresses over the bridge.

The run: an LLM judge over `responses` responses x `seeds` seeds. When
`cut_at` of its judgments are stored, a switch port is set down (the host
keeps running, unreachable):

- `cut="llm"`: the llm host that holds the run. The other llm worker takes
  the run over once the lease expires, and finishes it. Then the port comes
  up again, and the rehearsal watches what the cut worker does when it can
  reach the database and the server again.
- `cut="db"`: the database host, for `db_cut_seconds` (longer than the
  lease). The holder still reaches the server but cannot record its calls
  nor renew its lease: it must stop sending before the lease can expire
  (fencing), so that whoever takes the run over when the database is back
  never overlaps it. The rehearsal does not touch the database meanwhile.

Checked and reported: judgments = items x seeds; every prompt paid for once,
except the holder's calls in flight at the cut (from the fake server's log
by client address and time); what the cut worker wrote after it came back;
for the database cut, what the holder sent after its fence (its last
renewal + lease - margin) and after the takeover.

Settings of the hosts, as a lab would set them (environment):
CONCORD_RUN_LEASE_SECONDS and CONCORD_RUN_REAP_SECONDS from the plan,
CELERY_VISIBILITY_TIMEOUT 3600 (the default: the takeover does not wait for
the broker to give the task back), CONCORD_WORKER_BEAT_SECONDS 2.
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from dataclasses import asdict, dataclass, field
from glob import glob
from pathlib import Path

from tests.cluster.network import Topology, unavailable

REPO = Path(__file__).resolve().parent.parent.parent
HOSTS = {
    "ctl": 1,
    "db": 2,
    "broker": 3,
    "api": 4,
    "web": 10,
    "llm1": 11,
    "llm2": 12,
    "default": 13,
    "beat": 14,
}
CLONE_NEWNET = 0x40000000


@dataclass
class Plan:
    responses: int = 1500
    seeds: int = 2
    concurrency: int = 16  # the judge's max_concurrency: calling threads per run
    latency: float = 0.3  # the fake server's answer time, seconds
    cut_at: float = 0.4  # share of the judgments stored when the host is cut
    cut: str = "llm"  # what is cut: "llm" (the run's holder) or "db" (the database host)
    db_cut_seconds: float = 20.0  # how long the database host stays cut off
    lease_seconds: float = 10.0
    reap_seconds: float = 2.0
    after_restore: float = 60.0  # longest watch of the cut worker once it is back
    deadline: float = 600.0  # the whole rehearsal
    tag: str = field(default_factory=lambda: os.urandom(2).hex())
    workdir: str = ""


def postgres_bin() -> Path | None:
    found = sorted(glob("/usr/lib/postgresql/*/bin/postgres"))
    return Path(found[-1]).parent if found else None


def missing() -> str:
    """Why the rehearsal cannot run on this machine ("" when it can)."""
    reason = unavailable()
    if reason:
        return reason
    if postgres_bin() is None:
        return "no PostgreSQL server binaries under /usr/lib/postgresql/*/bin"
    if shutil.which("redis-server") is None:
        return "redis-server is not installed"
    if shutil.which("runuser") is None or shutil.which("unshare") is None:
        return "runuser and unshare (util-linux) are needed"
    try:
        import pwd

        pwd.getpwnam("postgres")
    except KeyError:
        return "no postgres user to run the throwaway PostgreSQL as"
    return ""


def enter_namespace(name: str) -> None:
    """This thread (the only one: call before any other starts) moves into the
    namespace: every socket it and its future threads open is made there."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    fd = os.open(f"/run/netns/{name}", os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns into {name} failed")
    finally:
        os.close(fd)


class Clock:
    def __init__(self) -> None:
        self.start = time.time()
        self.events: dict[str, float] = {}

    def mark(self, event: str, at: float | None = None) -> float:
        self.events.setdefault(event, (at or time.time()) - self.start)
        return self.events[event]

    def since(self, at: float) -> float:
        return at - self.start


class Cluster:
    """The hosts and their processes; `close` stops every one and deletes the
    namespaces, whatever happened."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.net = Topology(plan.tag, HOSTS)
        self.work = Path(plan.workdir)
        self.processes: dict[str, subprocess.Popen] = {}
        self.logs: dict[str, Path] = {}

    def address(self, host: str) -> str:
        return self.net.address(host)

    @property
    def database_url(self) -> str:
        return f"postgres://postgres@{self.address('db')}:5432/concord"

    @property
    def broker_url(self) -> str:
        return f"redis://{self.address('broker')}:6379/0"

    @property
    def api_url(self) -> str:
        return f"http://{self.address('api')}:8000/v1"

    def environment(self, host: str) -> dict[str, str]:
        return {
            **os.environ,
            "PYTHONPATH": str(REPO),
            "PYTHONUNBUFFERED": "1",
            "DJANGO_SETTINGS_MODULE": "config.settings.base",
            "DJANGO_DEBUG": "0",
            "DJANGO_LOG_LEVEL": "INFO",
            "DJANGO_ALLOWED_HOSTS": self.address("web"),
            "DATABASE_URL": self.database_url,
            "CELERY_BROKER_URL": self.broker_url,
            "CELERY_VISIBILITY_TIMEOUT": "3600",
            "CONCORD_RUN_LEASE_SECONDS": str(self.plan.lease_seconds),
            "CONCORD_RUN_REAP_SECONDS": str(self.plan.reap_seconds),
            "CONCORD_WORKER_BEAT_SECONDS": "2",
            "CONCORD_VAR_DIR": str(self.work / host),
        }

    def start(self, host: str, command: list[str], *, user: str = "", name: str = "") -> None:
        """A program on `host` (its own hostname too: lease owners name it)."""
        name = name or host
        prefix = ["runuser", "-u", user, "--"] if user else []
        log = self.work / f"{name}.log"
        self.logs[name] = log
        self.processes[name] = subprocess.Popen(
            [
                *self.net.exec_args(host),
                "unshare",
                "--uts",
                "--",
                "sh",
                "-c",
                'hostname "$0" && exec "$@"',
                host,
                *prefix,
                *command,
            ],
            cwd=REPO,
            env=self.environment(host),
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def log(self, name: str) -> str:
        try:
            return self.logs[name].read_text(errors="replace")
        except (KeyError, OSError):
            return ""

    def up_network(self) -> None:
        self.net.up()

    def start_services(self) -> None:
        """PostgreSQL, Redis and the fake OpenAI server, each on its host."""
        binaries = postgres_bin()
        assert binaries is not None
        data = self.work / "pg"
        data.mkdir()
        shutil.chown(self.work, "postgres")
        shutil.chown(data, "postgres")
        subprocess.run(
            ["runuser", "-u", "postgres", "--", str(binaries / "initdb"), "-D", str(data),
             "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"],
            check=True, capture_output=True,
        )  # fmt: skip
        with (data / "pg_hba.conf").open("a") as hba:  # the cluster's hosts, no password
            hba.write(f"host all postgres {self.net.subnet}.0/24 trust\n")
        self.start(
            "db",
            [str(binaries / "postgres"), "-D", str(data),
             "-c", f"listen_addresses={self.address('db')}", "-c", "port=5432",
             "-c", f"unix_socket_directories={data}", "-c", "max_connections=200",
             # a throwaway cluster: nothing here needs to survive a crash
             "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"],
            user="postgres",
        )  # fmt: skip
        (self.work / "redis").mkdir()
        self.start(
            "broker",
            ["redis-server", "--bind", self.address("broker"), "--port", "6379",
             "--save", "", "--appendonly", "no", "--protected-mode", "no",
             "--dir", str(self.work / "redis")],
        )  # fmt: skip
        self.start(
            "api",
            [sys.executable, "-m", "tests.fakes.openai_server", str(self.plan.latency),
             self.address("api"), "8000"],
        )  # fmt: skip

    def start_hosts(self) -> None:
        celery = [sys.executable, "-m", "celery", "-A", "config"]
        self.start(
            "web",
            [sys.executable, "-m", "gunicorn", "config.wsgi:application",
             "--bind", f"{self.address('web')}:8000", "--workers", "1", "--threads", "4"],
        )  # fmt: skip
        for host in ("llm1", "llm2"):
            # the solo pool: the run's task in the worker's own process, its
            # calls from the judge's calling threads (max_concurrency)
            self.start(
                host,
                [*celery, "worker", "-Q", "llm", "--pool", "solo", "--without-gossip",
                 "--without-mingle", "--loglevel", "INFO", "-n", f"{host}@%h"],
            )  # fmt: skip
        self.start(
            "default",
            [*celery, "worker", "-Q", "default", "--pool", "solo", "--without-gossip",
             "--without-mingle", "--loglevel", "INFO", "-n", "default@%h"],
        )  # fmt: skip
        self.start(
            "beat",
            [*celery, "beat", "--loglevel", "INFO", "--schedule", str(self.work / "beat-schedule")],
        )

    def exited(self) -> list[str]:
        return [name for name, p in self.processes.items() if p.poll() is not None]

    def close(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        for process in self.processes.values():
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=5)
        self.net.down()


def wait_until(condition, seconds: float, what: str, every: float = 0.2):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            value = condition()
            if value:
                return value
        time.sleep(every)
    raise TimeoutError(f"{what}: not within {seconds:.0f} s")


def http_json(url: str, body: dict | None = None, token: str = "") -> dict:
    request = urllib.request.Request(
        url,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Content-Type": "application/json"}
        | ({"Authorization": f"Token {token}"} if token else {}),
        method="GET" if body is None else "POST",
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())


def database_ready(cluster: Cluster) -> bool:
    import psycopg

    with psycopg.connect(
        f"postgres://postgres@{cluster.address('db')}:5432/postgres", connect_timeout=2
    ):
        return True


def build_data(plan: Plan, api_url: str):
    """The corpus (two synthetic meetings), `responses` responses of distinct
    texts (as many systems as it takes), a researcher with an API token and
    an LLM judge on the fake server."""
    import tempfile

    from rest_framework.authtoken.models import Token

    from corpus.importers.synthetic import write_synthetic_elitr
    from corpus.models import Dataset, QuestionText
    from generation.models import GenerationRun, Response, System
    from judging.importing import import_elitr_bench
    from judging.models import Evaluator
    from users.models import User

    with tempfile.TemporaryDirectory() as scratch:
        import_elitr_bench(write_synthetic_elitr(Path(scratch), meetings=2), languages=("en",))
    dataset = Dataset.objects.get(version="qa", language="en", split="test2")
    questions = list(
        QuestionText.objects.filter(dataset=dataset).values_list("question_id", flat=True)
    )
    systems_needed = -(-plan.responses // len(questions))
    responses = []
    for s in range(systems_needed):
        system = System.objects.create(name=f"cluster system {s}", model_name=f"m{s}")
        run = GenerationRun.objects.create(
            system=system, dataset=dataset, mode="st", status="done", origin="imported"
        )
        for q in questions:
            if len(responses) < plan.responses:
                responses.append(
                    Response(
                        run=run,
                        question_id=q,
                        text=f"According to system {s}, answer {len(responses)}: the team "
                        f"agreed to ship on Friday (item {q}).",
                    )
                )
    Response.objects.bulk_create(responses, batch_size=1000)
    judge = Evaluator.objects.create(
        name="cluster judge",
        kind="llm_rubric",
        config={
            "base_url": api_url,
            "model": "judge",
            "server": "vllm",
            "max_concurrency": plan.concurrency,
            "seeds": [2023 + k for k in range(plan.seeds)],
            "timeout_s": 10,
        },
    )
    researcher = User.objects.create_user("rehearsal", password="rehearsal-pw-1", role="researcher")
    token = Token.objects.create(user=researcher).key
    return dataset, judge, token


def rehearse(plan: Plan) -> dict:
    """Run the rehearsal; the results (figures, timeline, checks) as a dict.
    Every process and namespace it made is gone when it returns or raises."""
    reason = missing()
    if reason:
        raise RuntimeError(reason)
    plan.workdir = plan.workdir or __import__("tempfile").mkdtemp(prefix="concord-cluster-")
    cluster = Cluster(plan)
    clock = Clock()
    results: dict = {"plan": asdict(plan), "hosts": {h: cluster.address(h) for h in HOSTS}}
    try:
        cluster.up_network()
        enter_namespace(cluster.net.namespace("ctl"))
        cluster.start_services()
        wait_until(lambda: database_ready(cluster), 60, "PostgreSQL on the db host")
        import psycopg

        with psycopg.connect(
            f"postgres://postgres@{cluster.address('db')}:5432/postgres", autocommit=True
        ) as admin:
            admin.execute("CREATE DATABASE concord")
        os.environ.update(
            {
                k: v
                for k, v in cluster.environment("ctl").items()
                if k.startswith(("DJANGO_", "DATABASE_", "CELERY_", "CONCORD_"))
            }
        )
        os.environ["DJANGO_LOG_LEVEL"] = "WARNING"
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        dataset, judge, token = build_data(plan, cluster.api_url)
        cluster.start_hosts()
        results.update(drive(plan, cluster, clock, dataset, judge, token))
    except BaseException as error:
        results["error"] = f"{type(error).__name__}: {error}"
        results["logs"] = {name: cluster.log(name)[-3000:] for name in cluster.logs}
        raise
    finally:
        with contextlib.suppress(Exception):
            from django.db import connections

            connections.close_all()
        cluster.close()
        results["namespaces_left"] = [
            n for n in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
            .stdout.split("\n") if n.startswith(f"ccl{plan.tag}-")
        ]  # fmt: skip
        if not results.get("error"):
            shutil.rmtree(plan.workdir, ignore_errors=True)
    return results


def drive(plan: Plan, cluster: Cluster, clock: Clock, dataset, judge, token: str) -> dict:
    from judging.models import JudgeItem, JudgingRun, Judgment
    from llm.models import LLMCall
    from runs.models import WorkerHeartbeat

    web = f"http://{cluster.address('web')}:8000"
    wait_until(lambda: http_json(f"{web}/api/", token=token), 90, "the web host's API")
    wait_until(
        lambda: WorkerHeartbeat.objects.filter(stopped_at__isnull=True).count() >= 3,
        120,
        "three workers beating",
    )
    wait_until(lambda: "beat: Starting" in cluster.log("beat"), 60, "celery beat")
    clock.mark("hosts up")
    created = http_json(
        f"{web}/api/judging-runs/",
        {"evaluator": judge.name, "dataset": dataset.pk, "mode": "st"},
        token,
    )
    run_id = created["id"]
    total = JudgingRun.objects.get(pk=run_id).total
    ips = {cluster.address(h): h for h in HOSTS}
    holder_at_cut = cut_host = ""  # cut_host: the holder's host at the cut
    cut_at = 0.0
    last_renewal = None  # the cut holder's last heartbeat on the run, as seen here
    db_back = None  # when the database host came back (cut="db")
    renewed_before_cut = None  # the holder's last renewal before the database cut
    progress_at_cut: dict = {}
    owners: list[tuple[float, str]] = []
    deadline = time.monotonic() + plan.deadline
    run = JudgingRun.objects.get(pk=run_id)
    while time.monotonic() < deadline:
        run = JudgingRun.objects.get(pk=run_id)
        if run.lease_owner and (not owners or owners[-1][1] != run.lease_owner):
            owners.append((time.time(), run.lease_owner))
            clock.mark("run started")
            if cut_host and run.lease_owner != holder_at_cut:
                clock.mark("taken over (run held by the other worker)")
        if cut_host and run.lease_owner == holder_at_cut and run.heartbeat_at:
            last_renewal = run.heartbeat_at.timestamp()
        judged = Judgment.objects.filter(evaluator=judge).count()
        if judged:
            clock.mark("first judgment")
        if not cut_host and judged >= plan.cut_at * total:
            holder_at_cut = run.lease_owner
            cut_host = holder_at_cut.split(":")[0]
            progress_at_cut = {
                "judgments": judged,
                "items_done": JudgeItem.objects.filter(run_id=run_id, status="done").count(),
                "run_done_counter": run.done,
            }
            beat = JudgingRun.objects.values_list("heartbeat_at", flat=True).get(pk=run_id)
            last_renewal = renewed_before_cut = beat.timestamp() if beat else None
            progress_at_cut["ledger_calls"] = LLMCall.objects.count()  # the last look before
            cluster.net.cut("db" if plan.cut == "db" else cut_host)
            cut_at = time.time()
            clock.mark(f"{'db' if plan.cut == 'db' else cut_host} cut off", cut_at)
            if plan.cut == "db":
                # nothing here touches the database while it is cut off
                while time.time() < cut_at + plan.db_cut_seconds:
                    if cluster.exited():
                        raise RuntimeError(f"a host's process ended: {cluster.exited()}")
                    time.sleep(0.2)
                cluster.net.restore("db")
                db_back = time.time()
                clock.mark("db back on the network", db_back)
        if run.status in ("done", "failed", "cancelled"):
            break
        if cluster.exited():
            raise RuntimeError(f"a host's process ended: {cluster.exited()}")
        time.sleep(0.2)
    else:
        raise TimeoutError(f"the run did not finish within {plan.deadline:.0f} s")
    clock.mark("run finished", run.finished_at.timestamp() if run.finished_at else None)
    if last_renewal is not None and any(o != holder_at_cut for _, o in owners[1:]):
        clock.mark(f"{cut_host}'s lease ran out", last_renewal + plan.lease_seconds)
    finished = JudgingRun.objects.get(pk=run_id)
    state_at_finish = {
        "status": finished.status,
        "done": finished.done,
        "failed": finished.failed,
        "judgments": Judgment.objects.filter(evaluator=judge).count(),
        "ledger_calls": LLMCall.objects.count(),
        "items_not_done": JudgeItem.objects.filter(run_id=run_id).exclude(status="done").count(),
    }
    log_at_finish = fetch_log(cluster)
    # the cut host comes back (the database host is back already): what does
    # the cut worker do?
    cut_process = cluster.processes[cut_host]
    took = len(cluster.log(cut_host))
    if plan.cut == "db":
        restored = time.time()
    else:
        cluster.net.restore(cut_host)
        restored = time.time()
        clock.mark(f"{cut_host} back on the network", restored)

    def task_ended() -> bool:
        # after a database cut the holder's task may have ended before the run did
        later = cluster.log(cut_host)[0 if plan.cut == "db" else took :]
        return "succeeded in" in later or "raised" in later or cut_process.poll() is not None

    try:
        wait_until(
            task_ended,
            plan.after_restore,
            "the cut worker's task to end",
            every=0.5,
        )
        clock.mark(f"{cut_host}'s task ended")
    except TimeoutError:
        pass
    time.sleep(2)  # its last writes, if any
    after = JudgingRun.objects.get(pk=run_id)
    log = fetch_log(cluster)
    asked_before_restore = {r["prompt"] for r in log_at_finish}
    state_after_restore = {
        "status": after.status,
        "done": after.done,
        "failed": after.failed,
        "message": after.message,
        "judgments": Judgment.objects.filter(evaluator=judge).count(),
        "ledger_calls": LLMCall.objects.count(),
        "ledger_calls_after_restore": LLMCall.objects.filter(
            created_at__gte=datetime_of(restored)
        ).count(),
        "their_statuses": dict(
            Counter(
                LLMCall.objects.filter(created_at__gte=datetime_of(restored)).values_list(
                    "status", flat=True
                )
            )
        ),
        "items_not_done": JudgeItem.objects.filter(run_id=run_id).exclude(status="done").count(),
        # what reached the server from the cut host once it was back: a request
        # it sent before the cut whose packets the cut held up arrives then too
        "requests_from_cut_host_after_restore": sum(
            1 for r in log if ips.get(r["client"]) == cut_host and r["arrived"] >= restored
        ),
        # ... and of those, prompts nobody had asked before the host came back:
        # new work, which a fenced host never sends
        "new_prompts_from_cut_host_after_restore": sum(
            1
            for r in log
            if ips.get(r["client"]) == cut_host
            and r["arrived"] >= restored
            and r["prompt"] not in asked_before_restore
        ),
    }
    cut_entries = [r for r in log_at_finish if ips.get(r["client"]) == cut_host]
    last_cut_call = max((r["arrived"] for r in cut_entries), default=None)
    if last_cut_call is not None:
        clock.mark(f"last call seen from {cut_host}", last_cut_call)
    in_flight = [
        r
        for r in cut_entries
        if r["arrived"] <= cut_at and (r["answered"] is None or r["answered"] > cut_at)
    ]
    # A database cut: the holder's calls not on the record at the cut (asked
    # before it, minus the ledger's calls then: the run is the only one and
    # its holder the only caller so far). Each calling thread has at most one:
    # its last call, answered or not, whose write the cut held up.
    unrecorded_at_cut = None
    if plan.cut == "db":
        asked = sum(1 for r in cut_entries if r["arrived"] <= cut_at)
        unrecorded_at_cut = asked - progress_at_cut["ledger_calls"]
    paid = Counter(r["prompt"] for r in log_at_finish)
    twice = {p: n for p, n in paid.items() if n > 1}
    duplicates = []
    for prompt in twice:
        asks = sorted(
            (r for r in log_at_finish if r["prompt"] == prompt), key=lambda r: r["arrived"]
        )
        duplicates.append(
            {
                "asks": len(asks),
                "first_from": ips.get(asks[0]["client"], asks[0]["client"]),
                "first_at": clock.since(asks[0]["arrived"]),
                "first_answered_at": clock.since(asks[0]["answered"])
                if asks[0]["answered"]
                else None,
                "then_from": [ips.get(r["client"], r["client"]) for r in asks[1:]],
            }
        )
    by_host = Counter(ips.get(r["client"], r["client"]) for r in log_at_finish)
    takeover_owner = next((o for _, o in owners if o != holder_at_cut), "")
    taken_at = next((t for t, o in owners if o == takeover_owner), None)
    fencing: dict = {}
    if plan.cut == "db" and renewed_before_cut is not None:
        # the holder surely held the run until its last renewal + lease - margin
        margin = min(5.0, plan.lease_seconds / 3)  # CONCORD_RUN_LEASE_MARGIN_SECONDS (default)
        fence = renewed_before_cut + plan.lease_seconds - margin
        clock.mark(f"{cut_host}'s fence (last renewal + lease - margin)", fence)
        from_holder = sorted(r["arrived"] for r in log if ips.get(r["client"]) == cut_host)
        # before the takeover the holder's host is the holder; after it, the
        # other llm host holds the run, and the holder's must be silent
        fencing = {
            "margin": margin,
            "fence_at": clock.since(fence),
            "db_back_at": clock.since(db_back) if db_back else None,
            "taken_over_at": clock.since(taken_at) if taken_at else None,
            "holder_requests_after_cut": sum(1 for t in from_holder if t > cut_at),
            # what the cut cost the holder: its longest silence from the cut on
            # (to its last request when it was taken over)
            "holder_longest_pause": max(
                (b - a for a, b in itertools.pairwise(from_holder) if b > cut_at),
                default=None,
            ),
            "holder_requests_after_fence_before_db_back": sum(
                1 for t in from_holder if fence + 0.2 < t < (db_back or float("inf"))
            ),
            "holder_requests_after_takeover": (
                sum(1 for t in from_holder if taken_at and t > taken_at)
                if takeover_owner.split(":")[0] != cut_host
                else None
            ),
        }
    return {
        "run_id": run_id,
        "cut": plan.cut,
        "fencing": fencing,
        "items": total,
        "responses": plan.responses,
        "seeds": plan.seeds,
        "cut_host": cut_host,
        "holder_at_cut": holder_at_cut,
        "taken_over_by": takeover_owner,
        "owners": [(clock.since(t), o) for t, o in owners],
        "progress_at_cut": progress_at_cut,
        "requests": {
            "total": len(log_at_finish),
            "by_host": dict(by_host),
            "distinct_prompts": len(paid),
            "paid_twice": len(twice),
            "extra_asks": sum(n - 1 for n in twice.values()),
            "in_flight_on_cut_host_at_cut": len(in_flight),
            "unrecorded_on_cut_host_at_cut": unrecorded_at_cut,
        },
        "duplicates": duplicates,
        "at_finish": state_at_finish,
        "after_restore": state_after_restore,
        "timeline": dict(sorted(clock.events.items(), key=lambda e: e[1])),
        "cut_worker_log_tail": cluster.log(cut_host)[-4000:],
        "taking_worker_log_lines": [
            line
            for line in cluster.log(takeover_owner.split(":")[0] or "llm2").splitlines()
            + cluster.log("default").splitlines()
            if "Took over" in line
        ],
    }


def fetch_log(cluster: Cluster) -> list[dict]:
    return http_json(f"http://{cluster.address('api')}:8000/log")["requests"]


def datetime_of(seconds: float):
    import datetime

    return datetime.datetime.fromtimestamp(seconds, tz=datetime.UTC)
