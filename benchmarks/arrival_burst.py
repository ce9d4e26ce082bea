"""Arrival burst: a crowd study's places taken by a burst of Prolific arrivals,
on PostgreSQL behind gunicorn.

Phase 1: a crowd study of 50 tasks x 10 places; 500 distinct participants
arrive within 60 s (the study link, consent, the first item), then 50 more
after the quota is full. Targets: every place filled exactly once, no
participant with two assignments, the late ones shown the "Study full" page,
p95 server time of an arrival under 200 ms, no error.
Phase 2: 2,000 arrivals within 60 s on a study of 200 tasks x 10 places.
Targets: no error (every one gets a place), no deadlock (the database's
pg_stat_database.deadlocks and the PostgreSQL log).

An arrival is one participant with their own cookies: GET the study link
(the consent page), POST its form with the box ticked, follow the redirects
(the resume step) to the first item page. Its server time is the sum of
Django's time (the Server-Timing header) over those four requests; its client
time is the wall clock from the link to the first item. Arrival times are
uniform random in the window (a Poisson process given the count), started on
time whatever the server does (threads; the lag is reported).

    .venv/bin/python benchmarks/arrival_burst.py [--tasks 50] [--places 10]
        [--participants 500] [--late 50] [--window 60] [--big-tasks 200]
        [--big-participants 2000] [--big-window 60] [--workers 4]
        [--postgres URL] [--scratch-db concord_arrival_burst]

`--big-participants 0` skips phase 2. Prints a table, writes
benchmarks/results/arrival_burst.json, exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.crowd_web import (  # noqa: E402
    REPO,
    consent,
    gunicorn,
    percentile,
    scratch_database,
    server_ms,
    study_link,
    web_env,
)

SCRATCH_DB = "concord_arrival_burst"
FULL_TITLE = "<h1>Study full</h1>"
FULL_TEXT = "All places in this study are taken. Please return it on Prolific; thank you."
ITEM_URL = re.compile(r"/r/([^/]+)/item/(\d+)/$")
STEPS = ("link", "consent", "resume", "first item")
SERVER_P95_TARGET_MS = 200.0


# --- The study ----------------------------------------------------------------------------------


def import_meetings(count: int, folder: Path) -> None:
    """`count` synthetic meetings (8 questions x 3 systems each) in the test2 split.
    Needs Django set up."""
    from corpus.importers.synthetic import write_synthetic_elitr
    from judging.importing import import_elitr_bench

    source = write_synthetic_elitr(folder, meetings=count)
    import_elitr_bench(source, with_responses=True, languages=("en",))


def build_study(name: str, tasks: int, places: int) -> Any:
    """An open crowd study of `tasks` tasks (the first `tasks` meetings of test2,
    one task each) x `places` raters, built and opened through the services the
    console calls. Needs Django set up and import_meetings done."""
    from annotator.actions.items import check_build_items
    from annotator.actions.status import check_set_study_status
    from annotator.models import Study
    from annotator.selectors import documents_for
    from corpus.models import Dataset
    from generation.models import System

    dataset = Dataset.objects.get(version="qa", language="en", split="test2")
    meetings = list(documents_for(dataset).order_by("external_id")[:tasks])
    if len(meetings) < tasks:
        raise SystemExit(f"only {len(meetings)} meetings for {tasks} tasks")
    study = Study.objects.create(
        name=name, dataset=dataset, raters_per_task=places, completion_code="BURST123"
    )
    study.systems.set(System.objects.all())
    study.documents.set(meetings)
    check_build_items(study)
    check_set_study_status(study, Study.Status.OPEN)
    return study


# --- Arrivals -----------------------------------------------------------------------------------


@dataclass
class Arrival:
    """One participant's arrival and what they saw."""

    pid: str
    offset_s: float  # when, from the start of the phase
    outcome: str = ""  # "assigned", "full" (the Study full page at the link),
    # "full at consent" (the consent refused: all places taken), "error"
    token: str = ""
    lag_ms: float = 0.0  # started this late after its time
    client_ms: float = 0.0  # the link to the first item (or to the refusal)
    client_cpu_ms: float = 0.0  # the load generator's own CPU time on it
    server_ms: dict[str, float] = field(default_factory=dict)  # per step
    step_client_ms: dict[str, float] = field(default_factory=dict)
    detail: str = ""

    @property
    def server_total_ms(self) -> float:
        return sum(self.server_ms.values())


def note(arrival: Arrival, step: str, response: requests.Response) -> None:
    took = server_ms(response)
    if took is not None:
        arrival.server_ms[step] = took
    arrival.step_client_ms[step] = response.elapsed.total_seconds() * 1000
    if response.status_code >= 500 and not arrival.detail:
        arrival.detail = f"{step}: {response.status_code} at {response.url}"


def is_full_page(response: requests.Response) -> bool:
    return (
        response.status_code == 200 and FULL_TITLE in response.text and FULL_TEXT in response.text
    )


def arrive(base: str, study: str, arrival: Arrival, timeout: float = 30) -> None:
    """The study link, consent, the first item, as one participant with their
    own cookie jar; fills in `arrival`."""
    started, cpu = time.perf_counter(), time.thread_time()
    link = study_link(base, study, arrival.pid, "BURST", f"SESSION-{arrival.pid}")
    try:
        with requests.Session() as session:
            page = session.get(link, timeout=timeout)
            note(arrival, "link", page)
            if is_full_page(page):
                arrival.outcome = "full"
                return
            answer = consent(session, base, page, timeout)
            if answer is None:
                arrival.outcome = "error"
                arrival.detail = arrival.detail or f"link: {page.status_code}, no consent form"
                return
            for step, hop in zip(STEPS[1:], [*answer.history, answer], strict=False):
                note(arrival, step, hop)
            item = ITEM_URL.search(answer.url)
            if answer.status_code == 200 and item and len(answer.history) == 2:
                arrival.outcome, arrival.token = "assigned", item[1]
            elif answer.status_code == 409 and FULL_TEXT in answer.text:
                arrival.outcome = "full at consent"
            else:
                arrival.outcome = "error"
                arrival.detail = (
                    arrival.detail or f"consent ended {answer.status_code} {answer.url}"
                )
    except Exception as error:  # noqa: BLE001 - a failed arrival is a result, counted as an error
        arrival.outcome, arrival.detail = "error", repr(error)
    finally:
        arrival.client_ms = (time.perf_counter() - started) * 1000
        arrival.client_cpu_ms = (time.thread_time() - cpu) * 1000


def schedule(pids: list[str], window: float, seed: int) -> list[Arrival]:
    """Each pid at a uniform random time in [0, window): a Poisson process of
    len(pids) arrivals given their number."""
    rng = random.Random(seed)
    offsets = sorted(rng.uniform(0, window) for _ in pids)
    return [Arrival(pid, offset) for pid, offset in zip(pids, offsets, strict=True)]


def run_arrivals(base: str, study: str, arrivals: list[Arrival], clients: int = 200) -> float:
    """Start each arrival at its time, in threads (at most `clients` at once);
    returns the seconds from the start to the last arrival's end."""
    started = time.perf_counter()

    def run(arrival: Arrival) -> None:
        arrival.lag_ms = (time.perf_counter() - started - arrival.offset_s) * 1000
        arrive(base, study, arrival)

    with ThreadPoolExecutor(max_workers=clients) as pool:
        for arrival in arrivals:
            wait = started + arrival.offset_s - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
            pool.submit(run, arrival)
    return time.perf_counter() - started


# --- What the database holds afterwards ---------------------------------------------------------


def check_places(study_id: int, arrivals: list[Arrival], late: list[Arrival]) -> dict:
    """The study's places and participants as stored, against what the
    participants saw; `problems` lists every broken invariant (empty: all hold).
    Needs Django set up, on the benchmark's database."""
    from annotator.models import Assignment, Participant, Study, Task

    study = Study.objects.get(pk=study_id)
    places = study.raters_per_task
    tasks = list(Task.objects.filter(study=study).values_list("pk", flat=True))
    rows = list(
        Assignment.objects.filter(task__study=study).values_list(
            "task_id", "participant_id", "participant__prolific_pid", "token"
        )
    )
    loads = Counter(task for task, _, _, _ in rows)
    per_participant = Counter(participant for _, participant, _, _ in rows)
    pids = Counter(Participant.objects.filter(study=study).values_list("prolific_pid", flat=True))
    everyone = arrivals + late
    assigned = {a.pid: a.token for a in everyone if a.outcome == "assigned"}
    stored = {pid: token for _, _, pid, token in rows}
    capacity = len(tasks) * places
    exact = {t: loads[t] for t in tasks if loads[t] != places}
    over = {t: n for t, n in loads.items() if n > places}
    twice = [p for p, n in per_participant.items() if n > 1]
    pids_twice = [p for p, n in pids.items() if n > 1]
    late_not_full = [a.pid for a in late if a.outcome != "full"]
    errors = [a for a in everyone if a.outcome == "error"]
    problems = []
    if len(everyone) >= capacity and exact:
        problems.append(f"tasks not filled exactly ({places} places): {exact}")
    if over:
        problems.append(f"tasks over their places: {over}")
    if twice or pids_twice:
        problems.append(
            f"{len(twice)} participants with two assignments or more, "
            f"{len(pids_twice)} PROLIFIC_PIDs stored twice"
        )
    if stored != assigned:
        problems.append(
            f"stored assignments differ from the item pages reached: {len(stored)} stored, "
            f"{len(assigned)} reached, {len(set(stored.items()) ^ set(assigned.items()))} differ"
        )
    if late_not_full:
        problems.append(f"{len(late_not_full)} late arrivals not shown the Study full page")
    if errors:
        problems.append(f"{len(errors)} arrivals failed, e.g. {errors[0].detail}")
    return {
        "tasks": len(tasks),
        "places": capacity,
        "filled": len(rows),
        "tasks_exactly_full": len(tasks) - len(exact),
        "participants_stored": sum(pids.values()),
        "filled_exactly_once": not exact and not over and stored == assigned,
        "one_assignment_each": not twice and not pids_twice,
        "late_shown_full": len(late) - len(late_not_full),
        "problems": problems,
    }


# --- PostgreSQL: deadlocks ----------------------------------------------------------------------


def backends(conn: Any, database: str) -> set[int]:
    """The process ids of the server's connections to `database`."""
    rows = conn.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s", (database,))
    return {int(pid) for (pid,) in rows.fetchall()}


class PostgresWatch:
    """Deadlocks in one database during a phase: pg_stat_database.deadlocks
    (always there), and the server log's "deadlock detected" lines written
    meanwhile, told apart by the process id of the line (this database's
    backends, sampled during the phase) when the log can be read."""

    def __init__(self, postgres: str, database: str, log: str | None) -> None:
        import psycopg

        self.conn = psycopg.connect(postgres, autocommit=True)
        self.database = database
        self.log, self.log_problem = (log, None) if log else self.find_log()

    def find_log(self) -> tuple[str | None, str | None]:
        """The server's log file: pg_current_logfile() with the logging collector
        on, else Debian's pg_lsclusters for this port; (None, why) if neither."""
        row = self.conn.execute(
            "SELECT pg_current_logfile(), current_setting('data_directory'), "
            "current_setting('port')"
        ).fetchone()
        current, data_dir, port = row if row else (None, "", "")
        if current:
            path = Path(data_dir, current)
            return (str(path), None) if os.access(path, os.R_OK) else (None, f"{path} unreadable")
        try:
            listing = subprocess.run(
                ["pg_lsclusters", "--no-header"], capture_output=True, text=True, check=True
            ).stdout
        except (OSError, subprocess.CalledProcessError) as error:
            return None, f"no logging collector and no pg_lsclusters ({error})"
        for line in listing.splitlines():
            parts = line.split()
            if len(parts) >= 7 and parts[2] == str(port):
                path = Path(parts[-1])
                readable = os.access(path, os.R_OK)
                return (str(path), None) if readable else (None, f"{path} unreadable")
        return None, f"no cluster on port {port} in pg_lsclusters"

    def deadlocks(self) -> int:
        self.conn.execute("SELECT pg_stat_clear_snapshot()")
        row = self.conn.execute(
            "SELECT deadlocks FROM pg_stat_database WHERE datname = %s", (self.database,)
        ).fetchone()
        return int(row[0]) if row else 0

    @contextmanager
    def phase(self) -> Iterator[dict]:
        """Yields a dict filled in when the block ends: deadlocks (the counter's
        delta), log (what the log says, or why it was not read), and what the
        database's connections were doing, sampled every 0.2 s: running a query
        (active) or waiting for a lock (the study's row lock, for a consent)."""
        found: dict = {}
        before = self.deadlocks()
        offset = Path(self.log).stat().st_size if self.log else 0
        pids: set[int] = set()
        samples: list[tuple[int, int]] = []
        done = threading.Event()

        def sample() -> None:
            import psycopg

            with psycopg.connect(self.conn.info.dsn, autocommit=True) as conn:
                while not done.wait(0.2):
                    rows = conn.execute(
                        "SELECT pid, state = 'active', wait_event_type = 'Lock' "
                        "FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                        (self.database,),
                    ).fetchall()
                    pids.update(int(pid) for pid, _, _ in rows)
                    samples.append((sum(1 for r in rows if r[1]), sum(1 for r in rows if r[2])))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            yield found
        finally:
            done.set()
            sampler.join()
            pids.update(backends(self.conn, self.database))
            time.sleep(1.5)  # backends report their statistics within a second of going idle
            found["deadlocks"] = self.deadlocks() - before
            found["log"] = self.read_log(offset, pids)
            found["connections_max"] = len(pids)
            found["active_mean"] = statistics.mean(a for a, _ in samples) if samples else 0.0
            found["lock_waiting_mean"] = statistics.mean(w for _, w in samples) if samples else 0
            found["lock_waiting_share"] = (
                sum(1 for _, w in samples if w) / len(samples) if samples else 0.0
            )

    def read_log(self, offset: int, pids: set[int]) -> dict:
        if not self.log:
            return {"read": False, "why": self.log_problem}
        try:
            with open(self.log, "rb") as log:
                log.seek(offset)
                lines = log.read().decode("utf-8", "replace").splitlines()
        except OSError as error:
            return {"read": False, "why": f"{self.log}: {error}"}
        found = [line for line in lines if "deadlock detected" in line]
        ours = [
            line for line in found if (m := re.search(r"\[(\d+)\]", line)) and int(m[1]) in pids
        ]
        return {
            "read": True,
            "file": self.log,
            "lines": len(lines),
            "deadlock_lines": len(ours),
            "deadlock_lines_other_databases": len(found) - len(ours),
            "examples": ours[:5],
        }

    def close(self) -> None:
        self.conn.close()


# --- Figures ------------------------------------------------------------------------------------


def summary(name: str, arrivals: list[Arrival], elapsed: float) -> dict:
    """Counts and times of a phase's arrivals (times over those that reached an
    item page or a refusal; an error's partial time is left out)."""
    answered = [a for a in arrivals if a.outcome != "error"]
    server = [a.server_total_ms for a in answered] or [0.0]
    client = [a.client_ms for a in answered] or [0.0]
    outcomes = Counter(a.outcome for a in arrivals)
    steps = {}
    for step in STEPS:
        values = [a.server_ms[step] for a in answered if step in a.server_ms]
        waits = [a.step_client_ms[step] for a in answered if step in a.step_client_ms]
        if values:
            steps[step] = {
                "count": len(values),
                "server_p50_ms": statistics.median(values),
                "server_p95_ms": percentile(values, 95),
                "server_max_ms": max(values),
                "client_p95_ms": percentile(waits, 95),
            }
    return {
        "phase": name,
        "arrivals": len(arrivals),
        "assigned": outcomes["assigned"],
        "study_full_page": outcomes["full"],
        "refused_at_consent": outcomes["full at consent"],
        "errors": outcomes["error"],
        "server_p50_ms": statistics.median(server),
        "server_p95_ms": percentile(server, 95),
        "server_max_ms": max(server),
        "client_p50_ms": statistics.median(client),
        "client_p95_ms": percentile(client, 95),
        "client_max_ms": max(client),
        "start_lag_max_ms": max((a.lag_ms for a in arrivals), default=0.0),
        "client_cpu_ms_per_arrival": statistics.mean(a.client_cpu_ms for a in arrivals)
        if arrivals
        else 0.0,
        "seconds": elapsed,
        "arrivals_per_second": len(arrivals) / elapsed if elapsed else 0.0,
        "load_average_at_end": os.getloadavg()[0],  # the machine's 1-minute load
        "steps": steps,
        "first_errors": [a.detail for a in arrivals if a.outcome == "error"][:5],
    }


def print_tables(phases: list[dict], targets: list[dict], header: str) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=170)
    console.print(header)
    table = Table(
        title="Arrivals (ms; server: Django's time summed over an arrival's 4 requests; client: "
        "the link to the first item, from the arrival's actual start)"
    )
    columns = ["phase", "arrivals", "assigned", "study full", "refused at consent", "errors"]
    columns += ["server p50", "server p95", "server max", "client p50", "client p95"]
    columns += ["took s", "arr/s", "start lag max s", "load at end"]
    for column in columns:
        table.add_column(column, justify="left" if column == "phase" else "right")
    for p in phases:
        table.add_row(
            p["phase"],
            *(str(p[k]) for k in ("arrivals", "assigned", "study_full_page")),
            *(str(p[k]) for k in ("refused_at_consent", "errors")),
            *(f"{p[k]:.1f}" for k in ("server_p50_ms", "server_p95_ms", "server_max_ms")),
            *(f"{p[k]:.1f}" for k in ("client_p50_ms", "client_p95_ms")),
            f"{p['seconds']:.0f}",
            f"{p['arrivals_per_second']:.1f}",
            f"{p['start_lag_max_ms'] / 1000:.1f}",
            f"{p['load_average_at_end']:.1f}",
        )
    console.print(table)
    steps = Table(title="Per request (ms)")
    for column in ("phase", "request", "count", "server p50", "server p95", "server max"):
        steps.add_column(column, justify="left" if column in ("phase", "request") else "right")
    steps.add_column("client p95", justify="right")
    for p in phases:
        for step, s in p["steps"].items():
            steps.add_row(
                p["phase"],
                step,
                str(s["count"]),
                *(f"{s[k]:.1f}" for k in ("server_p50_ms", "server_p95_ms", "server_max_ms")),
                f"{s['client_p95_ms']:.1f}",
            )
    console.print(steps)
    database = Table(title="PostgreSQL, sampled every 0.2 s during the phase")
    columns = ["phase", "backends seen", "active (mean)", "waiting for a lock (mean)"]
    columns += ["samples with a lock wait", "deadlocks (counter)", "deadlock lines (log)"]
    for column in columns:
        database.add_column(column, justify="left" if column == "phase" else "right")
    for p in phases:
        if "postgres" not in p:
            continue
        pg, log = p["postgres"], p["postgres"]["log"]
        database.add_row(
            p["phase"],
            str(pg["connections_max"]),
            f"{pg['active_mean']:.2f}",
            f"{pg['lock_waiting_mean']:.2f}",
            f"{100 * pg['lock_waiting_share']:.0f}%",
            str(pg["deadlocks"]),
            str(log["deadlock_lines"]) if log["read"] else f"not read: {log['why']}",
        )
    console.print(database)
    verdicts = Table(title="Targets")
    for column in ("phase", "target", "measured", "verdict"):
        verdicts.add_column(column)
    for t in targets:
        verdicts.add_row(t["phase"], t["target"], t["measured"], "met" if t["met"] else "NOT met")
    console.print(verdicts)


def target(phase: str, what: str, measured: str, met: bool) -> dict:
    return {"phase": phase, "target": what, "measured": measured, "met": bool(met)}


def deadlock_targets(phase: str, seen: dict) -> list[dict]:
    log = seen["log"]
    said = (
        f"log {log['file']}: {log['deadlock_lines']} lines from this database "
        f"({log['deadlock_lines_other_databases']} from others)"
        if log["read"]
        else f"log not read ({log['why']}): only the counter speaks"
    )
    return [
        target(
            phase, "no deadlock (pg_stat_database)", f"{seen['deadlocks']}", not seen["deadlocks"]
        ),
        target(
            phase,
            "no deadlock (PostgreSQL log)",
            said,
            not log["read"] or not log["deadlock_lines"],
        ),
    ]


def phase_one_targets(name: str, phase: dict, late: int) -> list[dict]:
    stored, p95 = phase["database"], phase["server_p95_ms"]
    return [
        target(
            name,
            "every place filled exactly once",
            f"{stored['filled']} of {stored['places']} places; {stored['tasks_exactly_full']} "
            f"of {stored['tasks']} tasks exactly full",
            stored["filled_exactly_once"],
        ),
        target(
            name,
            "no participant with two assignments",
            f"{stored['participants_stored']} participants, {stored['filled']} assignments",
            stored["one_assignment_each"],
        ),
        target(
            name,
            'late ones shown the "Study full" page',
            f"{stored['late_shown_full']} of {late}",
            stored["late_shown_full"] == late,
        ),
        target(
            name,
            f"p95 server time of an arrival < {SERVER_P95_TARGET_MS:.0f} ms",
            f"{p95:.1f} ms",
            p95 < SERVER_P95_TARGET_MS,
        ),
        target(
            name,
            "no error (no 5xx)",
            str(phase["errors"] + phase["late"]["errors"]),
            not phase["errors"] + phase["late"]["errors"],
        ),
        *deadlock_targets(name, phase["postgres"]),
    ]


def phase_two_targets(name: str, phase: dict) -> list[dict]:
    stored = phase["database"]
    return [
        target(
            name,
            "no error (each arrival on its first item)",
            f"{phase['errors']} errors, {phase['assigned']} of {phase['arrivals']} placed",
            not phase["errors"] and phase["assigned"] == phase["arrivals"],
        ),
        target(
            name,
            "places as stored match the pages reached",
            "; ".join(stored["problems"]) or "all hold",
            not stored["problems"],
        ),
        *deadlock_targets(name, phase["postgres"]),
    ]


# --- The run ------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=50)
    parser.add_argument("--places", type=int, default=10, help="raters per task (both phases)")
    parser.add_argument("--participants", type=int, help="default: tasks x places")
    parser.add_argument("--late", type=int, default=50, help="arrivals after the quota is full")
    parser.add_argument("--late-window", type=float, default=5.0)
    parser.add_argument("--window", type=float, default=60.0, help="seconds of phase 1's burst")
    parser.add_argument("--big-tasks", type=int, default=200)
    parser.add_argument("--big-participants", type=int, help="default: big tasks x places")
    parser.add_argument("--big-window", type=float, default=60.0)
    parser.add_argument("--workers", type=int, default=4, help="gunicorn worker processes")
    parser.add_argument("--clients", type=int, default=200, help="client threads at most")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--alone",
        type=int,
        default=20,
        help="arrivals one at a time before the burst, on a study of their own: what an "
        "arrival costs on this machine now without the burst's queueing and lock waits",
    )
    parser.add_argument("--postgres", default="postgres://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--scratch-db", default=SCRATCH_DB)
    parser.add_argument("--pg-log", help="the PostgreSQL log file (default: found)")
    parser.add_argument(
        "--output", type=Path, default=REPO / "benchmarks" / "results" / "arrival_burst.json"
    )
    args = parser.parse_args()
    participants = args.participants or args.tasks * args.places
    big = args.big_tasks * args.places if args.big_participants is None else args.big_participants
    if participants < args.tasks * args.places:
        parser.error("--participants must fill the quota (at least tasks x places)")

    tmp = tempfile.mkdtemp(prefix="concord-burst-")
    load_before = os.getloadavg()
    phases: list[dict] = []
    targets: list[dict] = []
    with scratch_database(args.postgres, args.scratch_db) as database_url:
        env = web_env(database_url, tmp)
        os.environ.update(env)
        import django

        django.setup()
        from django.core.management import call_command
        from django.db import connections

        call_command("migrate", verbosity=0)
        import_meetings(max(args.tasks, args.big_tasks if big else 0), Path(tmp) / "meetings")
        first = build_study("Arrival burst", args.tasks, args.places)
        second = build_study("Arrival burst, 2000", args.big_tasks, args.places) if big else None
        alone = build_study("One at a time", 1, args.alone) if args.alone else None
        connections.close_all()
        watch = PostgresWatch(args.postgres, args.scratch_db, args.pg_log)
        try:
            with gunicorn(env, args.workers) as base:
                warm_up(base, str(first.public_id), args.workers)
                seed = args.seed
                if alone is not None:
                    single = schedule([f"ALONE{n:05d}" for n in range(args.alone)], 0, seed)
                    started = time.perf_counter()
                    for arrival in single:
                        arrive(base, str(alone.public_id), arrival)
                    took = time.perf_counter() - started
                    phases.append(summary(f"{args.alone} one at a time", single, took))
                name = f"{participants} in {args.window:g} s + {args.late} late"
                burst = schedule([f"BURST{n:05d}" for n in range(participants)], args.window, seed)
                late = schedule(
                    [f"LATE{n:05d}" for n in range(args.late)], args.late_window, seed + 1
                )
                with watch.phase() as seen:
                    elapsed = run_arrivals(base, str(first.public_id), burst, args.clients)
                    after = run_arrivals(base, str(first.public_id), late, args.clients)
                stored = check_places(first.pk, burst, late)
                phases.append(
                    summary(name, burst, elapsed)
                    | {"late": summary("late", late, after), "database": stored, "postgres": seen}
                )
                targets += phase_one_targets(name, phases[-1], len(late))
                if second is not None:
                    name = f"{big} in {args.big_window:g} s"
                    crowd = schedule([f"BIG{n:05d}" for n in range(big)], args.big_window, seed + 2)
                    with watch.phase() as seen:
                        elapsed = run_arrivals(base, str(second.public_id), crowd, args.clients)
                    stored = check_places(second.pk, crowd, [])
                    phases.append(
                        summary(name, crowd, elapsed) | {"database": stored, "postgres": seen}
                    )
                    targets += phase_two_targets(name, phases[-1])
        finally:
            watch.close()
            connections.close_all()

    header = (
        f"Arrival burst: {args.tasks} tasks x {args.places} places, gunicorn {args.workers} "
        f"sync workers, PostgreSQL, {os.cpu_count()} CPUs (load average before "
        f"{load_before[0]:.1f}, after {os.getloadavg()[0]:.1f}; the client threads share them)"
    )
    print_tables(phases, targets, header)
    met = all(t["met"] for t in targets)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(
        json.dumps(
            {
                "benchmark": "arrival_burst",
                "command": "python benchmarks/arrival_burst.py " + " ".join(sys.argv[1:]),
                "settings": {k: v for k, v in vars(args).items() if k != "output"}
                | {"participants": participants, "big_participants": big},
                "machine": {
                    "python": platform.python_version(),
                    "platform": platform.platform(),
                    "cpus": os.cpu_count(),
                    "load_average_before": load_before,
                    "load_average_after": os.getloadavg(),
                },
                "arrival_server_time": "sum of Server-Timing over link, consent, resume, item",
                "phases": phases,
                "targets": targets,
                "met": met,
            },
            indent=2,
            default=str,
        )
    )
    print(f"{'All targets met' if met else 'A target is NOT met'}; wrote {args.output}")
    return 0 if met else 1


def warm_up(base: str, study: str, workers: int) -> None:
    """Every worker loads its URLs and templates before the clock starts: the
    study link's consent page, which stores nothing about a participant."""
    link = study_link(base, study, "WARMUP", "WARMUP", "WARMUP")
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(lambda _: requests.get(link, timeout=30), range(4 * workers)))


if __name__ == "__main__":
    sys.exit(main())
