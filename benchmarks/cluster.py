"""The cluster rehearsal: Concord as separate hosts (network namespaces on one
bridge: PostgreSQL, Redis, the fake OpenAI server, web, two llm workers, a
default worker, beat), a judging run of a few thousand items, and the llm
host that holds it cut off from the network in the middle of it (its switch
port down: no clean stop). The other llm worker takes the run over and
finishes it; the cut host then comes back. With `--cut db` the database
host is cut instead, for `--db-cut-seconds` (longer than the lease): the
holder must stop sending before its lease can expire, so that the takeover
never overlaps it. See tests/cluster/rehearsal.py.

Needs root, `ip netns`, PostgreSQL's server binaries and redis-server; makes
and removes everything itself (nothing on the machine's own network).

    sudo .venv/bin/python benchmarks/cluster.py [--responses 1500] [--seeds 2]
        [--concurrency 16] [--latency 0.3] [--cut-at 0.4] [--lease 10] [--reap 2]
        [--cut llm|db] [--db-cut-seconds 20]

Prints the timeline and the counts, writes benchmarks/results/cluster.json
(`--output`), and exits 1 when a check fails.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.cluster.rehearsal import Plan, rehearse  # noqa: E402


def checks(results: dict) -> dict[str, bool]:
    """What the rehearsal must show."""
    if results["cut"] == "db":
        return database_cut_checks(results)
    requests = results["requests"]
    after = results["after_restore"]
    cut = results["cut_host"]
    return {
        "judgments = items x seeds": results["at_finish"]["judgments"] == results["items"],
        "run done, nothing failed": (
            results["at_finish"]["status"] == "done"
            and results["at_finish"]["done"] == results["items"]
            and results["at_finish"]["failed"] == 0
        ),
        "taken over by the other llm worker": bool(results["taken_over_by"])
        and results["taken_over_by"].split(":")[0] != cut,
        "no prompt paid twice beyond the cut host's calls at the cut": all(
            d["asks"] == 2
            and d["first_from"] == cut
            and d["first_at"] <= results["timeline"][f"{cut} cut off"]
            for d in results["duplicates"]
        )
        and requests["extra_asks"] <= results["plan"]["concurrency"],
        # Each calling thread of the cut host has at most one request out at the
        # cut: answered but not recorded (a duplicate: the other host asked it
        # again), or held up in the network and delivered once the host is back.
        # Back on the network, it sends nothing else (its fence: the lease lost).
        "the cut host sent nothing new once back": (
            after["new_prompts_from_cut_host_after_restore"] == 0
            and after["requests_from_cut_host_after_restore"] + len(results["duplicates"])
            <= results["plan"]["concurrency"]
        ),
        "its late writes changed no result": (
            after["judgments"] == results["items"]
            and after["status"] == "done"
            and after["done"] == results["items"]
            and after["failed"] == 0
            and after["items_not_done"] == 0
        ),
        "no namespace left": not results["namespaces_left"],
    }


def database_cut_checks(results: dict) -> dict[str, bool]:
    """The database host cut: the run survives it by itself, and its holder,
    unable to renew its lease, stops sending before the lease can expire."""
    requests = results["requests"]
    fencing = results["fencing"]
    holder = results["cut_host"]
    # the holder's calls in flight at the fault: not on the record at the cut
    # (answered or not, their writes held up), one per calling thread at most
    in_flight = requests["unrecorded_on_cut_host_at_cut"]
    return {
        "judgments = items x seeds": results["at_finish"]["judgments"] == results["items"],
        "run done, nothing failed": (
            results["at_finish"]["status"] == "done"
            and results["at_finish"]["done"] == results["items"]
            and results["at_finish"]["failed"] == 0
        ),
        "the holder sent nothing past its fence while the database was cut": (
            fencing.get("holder_requests_after_fence_before_db_back") == 0
        ),
        "the holder sent nothing once the run was taken over": (
            fencing.get("holder_requests_after_takeover") in (0, None)
        ),
        "paid twice <= the holder's calls in flight at the cut": all(
            d["asks"] == 2 and d["first_from"] == holder for d in results["duplicates"]
        )
        and requests["extra_asks"] <= min(in_flight, results["plan"]["concurrency"]),
        "its late writes changed no result": (
            results["after_restore"]["judgments"] == results["items"]
            and results["after_restore"]["status"] == "done"
            and results["after_restore"]["items_not_done"] == 0
        ),
        "no namespace left": not results["namespaces_left"],
    }


def report(results: dict) -> None:
    plan = results["plan"]
    cut = results["cut_host"]
    print(
        f"{results['responses']} responses x {results['seeds']} seeds = {results['items']} items; "
        f"{plan['concurrency']} calling threads, server latency {plan['latency'] * 1000:.0f} ms, "
        f"lease {plan['lease_seconds']:g} s, reaper every {plan['reap_seconds']:g} s"
    )
    print("\ntimeline (seconds since the rehearsal started)")
    for event, at in results["timeline"].items():
        print(f"  {at:8.1f}  {event}")
    at_cut = results["progress_at_cut"]
    print(
        f"\nat the cut: {at_cut['judgments']} judgments stored, {at_cut['items_done']} items "
        f"done, {at_cut['ledger_calls']} calls on the ledger; the run was held by "
        f"{results['holder_at_cut']}, then by {results['taken_over_by'] or 'nobody else'}"
    )
    requests = results["requests"]
    print(
        f"requests to the server: {requests['total']} for {requests['distinct_prompts']} "
        f"prompts ({', '.join(f'{h} {n}' for h, n in sorted(requests['by_host'].items()))}); "
        f"paid twice: {requests['paid_twice']} (in flight on {cut} at the cut, "
        f"from the server's log: {requests['in_flight_on_cut_host_at_cut']}"
        + (
            f"; not on the record at the cut: {requests['unrecorded_on_cut_host_at_cut']}"
            if requests.get("unrecorded_on_cut_host_at_cut") is not None
            else ""
        )
        + ")"
    )
    fencing = results.get("fencing") or {}
    if fencing:
        print(
            f"database cut: {cut}'s fence (last renewal + lease - {fencing['margin']:.1f} s) at "
            f"{fencing['fence_at']:.1f} s, database back at {fencing['db_back_at']:.1f} s, "
            + (
                f"taken over at {fencing['taken_over_at']:.1f} s"
                if fencing["taken_over_at"] is not None
                else "not taken over"
            )
            + f"; {cut} sent "
            f"{fencing['holder_requests_after_cut']} requests after the cut, "
            f"{fencing['holder_requests_after_fence_before_db_back']} past its fence, "
            f"{fencing['holder_requests_after_takeover']} after the takeover; its longest "
            f"pause from the cut on: {fencing['holder_longest_pause'] or 0:.1f} s"
        )
    after = results["after_restore"]
    print(
        f"after {cut} came back: {after['requests_from_cut_host_after_restore']} requests "
        f"from it, {after['ledger_calls_after_restore']} calls it put on the ledger "
        f"({', '.join(f'{n} {s}' for s, n in after['their_statuses'].items()) or 'none'}), "
        f"{after['judgments']} judgments, run {after['status']} "
        f"({after['done']} done, {after['failed']} failed)"
    )
    print()
    for name, met in results["checks"].items():
        print(f"  [{'ok' if met else 'FAILED'}] {name}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--responses", type=int, default=1500)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency", type=float, default=0.3)
    parser.add_argument("--cut-at", type=float, default=0.4)
    parser.add_argument("--lease", type=float, default=10.0)
    parser.add_argument("--reap", type=float, default=2.0)
    parser.add_argument("--after-restore", type=float, default=60.0)
    parser.add_argument(
        "--cut", choices=["llm", "db"], default="llm", help="the run's llm host, or the database"
    )
    parser.add_argument("--db-cut-seconds", type=float, default=20.0)
    parser.add_argument("--tag", default="", help="names of the namespaces: ccl<TAG>-<host>")
    parser.add_argument(
        "--output", type=Path, default=REPO / "benchmarks" / "results" / "cluster.json"
    )
    args = parser.parse_args()
    plan = Plan(
        responses=args.responses,
        seeds=args.seeds,
        concurrency=args.concurrency,
        latency=args.latency,
        cut_at=args.cut_at,
        lease_seconds=args.lease,
        reap_seconds=args.reap,
        after_restore=args.after_restore,
        cut=args.cut,
        db_cut_seconds=args.db_cut_seconds,
    )
    if args.tag:
        plan.tag = args.tag
    # a plain kill of this process still stops the hosts and deletes the namespaces
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.perf_counter()
    results = rehearse(plan)
    results["seconds"] = time.perf_counter() - started
    results["checks"] = checks(results)
    report(results)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(
        json.dumps(
            {
                "benchmark": "cluster",
                "command": "python benchmarks/cluster.py " + " ".join(sys.argv[1:]),
                "machine": {
                    "python": platform.python_version(),
                    "platform": platform.platform(),
                    "cpus": os.cpu_count(),
                },
                **results,
            },
            indent=2,
        )
    )
    print(f"Wrote {args.output} ({results['seconds']:.0f} s)")
    return 0 if all(results["checks"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
