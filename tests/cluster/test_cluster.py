"""The cluster rehearsal at CI size (benchmarks/cluster.py runs the full one):
Concord's hosts in network namespaces, the llm host that holds a judging run
cut off in the middle of it; the other llm worker takes the run over and
finishes it, nothing is judged twice, nothing paid twice beyond the cut
host's calls in flight at the cut, and the cut host, back on the network,
changes nothing. Then the database host cut off instead: the holder, unable
to renew its lease, stops sending before the lease can expire. Needs root,
`ip netns`, PostgreSQL's server binaries and redis-server (skipped without
them, failed under CONCORD_REQUIRE_SERVICES=1). About 100 s each on two busy
cores."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.cluster.network import remove_tagged
from tests.cluster.rehearsal import missing
from tests.conftest import REPO, require

pytestmark = pytest.mark.cluster

SIZE = ["--responses", "200", "--seeds", "2", "--concurrency", "8", "--latency", "0.2"]


def rehearsal_tag() -> str:
    """A fresh tag whose /24 (tests.cluster.network: 10.231.X.0/24, X from the
    tag) differs from the other xdist worker's: `make test` runs the two
    rehearsals side by side."""
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
    while True:
        tag = os.urandom(2).hex()
        if int(tag, 16) % 250 % 2 == worker % 2:
            return tag


def rehearsed(tmp_path, *args: str) -> dict:
    """benchmarks/cluster.py at CI size; its results, every check met."""
    reason = missing()
    require(not reason, reason)
    tag = rehearsal_tag()
    output = tmp_path / "cluster.json"
    try:
        completed = subprocess.run(
            [sys.executable, "benchmarks/cluster.py", *SIZE, *args]
            + ["--tag", tag, "--output", str(output)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=420,
        )
    finally:
        left = remove_tagged(tag)  # only if the rehearsal itself was killed
    print(completed.stdout)
    assert not left, f"the rehearsal left namespaces behind: {left}"
    assert output.exists(), completed.stdout[-3000:] + completed.stderr[-5000:]
    results = json.loads(output.read_text())
    failed = [name for name, met in results["checks"].items() if not met]
    assert not failed, completed.stdout
    assert completed.returncode == 0, completed.stderr[-5000:]
    return results


def test_a_cluster_loses_the_llm_host_of_a_run_and_the_run_finishes(tmp_path):
    results = rehearsed(tmp_path, "--after-restore", "40")
    items = 200 * 2
    assert results["items"] == items
    assert results["at_finish"]["judgments"] == items
    # half-way, not at an edge: the cut came with work left to take over
    assert 0 < results["progress_at_cut"]["judgments"] < items
    cut, timeline = results["cut_host"], results["timeline"]
    assert cut in ("llm1", "llm2") and not results["taken_over_by"].startswith(cut)
    # taken over once the lease (10 s) ran out and a reaper (every 2 s) looked
    taken = timeline["taken over (run held by the other worker)"] - timeline[f"{cut} cut off"]
    assert 0 < taken < 10 + 2 + 5, timeline
    # every prompt paid once, but for calls the cut host had in flight: each
    # calling thread has at most one call not yet on the record
    requests = results["requests"]
    assert requests["distinct_prompts"] == items
    assert requests["extra_asks"] <= 8
    assert requests["total"] == items + requests["extra_asks"]
    # back on the network, the cut host sends nothing new: what reaches the
    # server from it then is a request the cut held up (one per thread at most)
    after = results["after_restore"]
    assert after["new_prompts_from_cut_host_after_restore"] == 0
    assert after["requests_from_cut_host_after_restore"] + len(results["duplicates"]) <= 8


def test_a_cluster_loses_its_database_host_and_the_cut_off_holder_is_fenced(tmp_path):
    """The database host cut for 20 s, twice the lease: the holder can neither
    record its calls nor renew its lease. It must send nothing past its last
    renewal + lease - margin, nor once the run was taken over, and the run
    ends done with paid twice at most the holder's calls in flight at the cut
    (before: 32-33 paid twice, its threads sending fresh requests 1.4 s after
    the takeover)."""
    results = rehearsed(tmp_path, "--cut", "db", "--db-cut-seconds", "20", "--after-restore", "40")
    items = 200 * 2
    assert results["cut"] == "db" and results["items"] == items
    assert results["at_finish"]["judgments"] == items
    fencing, requests = results["fencing"], results["requests"]
    assert fencing["holder_requests_after_fence_before_db_back"] == 0, fencing
    assert fencing["holder_requests_after_takeover"] in (0, None), fencing
    assert requests["distinct_prompts"] == items
    # paid twice: at most the holder's calls not on the record at the cut, one
    # per calling thread (before: 16, its threads asking again after the takeover)
    assert requests["extra_asks"] <= min(requests["unrecorded_on_cut_host_at_cut"], 8), requests
