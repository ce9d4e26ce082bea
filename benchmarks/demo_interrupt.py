"""Ctrl-C on the demo, again and again, on a loaded machine: does it always stop cleanly?

Starts `manage.py run_demo` as `make demo` does (its own process group and
embedded defaults: SQLite and the filesystem broker under a scratch folder),
waits until the web server answers and the worker is ready, then sends SIGINT
to the whole process group, as a terminal's Ctrl-C does, after a random delay
of up to a second (so that the signal falls at a different point of the
demo's loop each time). Meanwhile one CPU-burning process per core keeps the
machine busy. A clean stop is exit code 0, "Stopping" printed and no process
of the demo left.

    .venv/bin/python benchmarks/demo_interrupt.py [--runs 20] [--burners N] [--signal INT]
        [--background] [--repo DIR]

--background starts the demo with SIGINT ignored, as a shell does with a
program it starts in the background (`make demo &` in a script); --repo runs
another checkout's demo (an older commit, to compare).

Prints a table and writes benchmarks/results/demo_interrupt.json (with the
end of the demo's output for every run that did not stop cleanly).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import platform
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BURN = "while True: pass"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def session_members(session_id: int) -> list[int]:
    """Live processes whose session is the demo's (it is started as a session leader)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == session_id and fields[0] != "Z":
                found.append(int(entry))
    return found


def serving(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=2).close()
        return True
    except OSError:
        return False


def ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def default_sigint() -> None:
    """Whatever this script inherited (it may run in the background itself)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def one_run(
    number: int, repo: Path, var_dir: Path, stop_signal: int, delay: float, background: bool
) -> dict:
    port = free_port()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE")
    }
    env.update(
        CONCORD_VAR_DIR=str(var_dir),
        CONCORD_DEMO_PASSWORD="demo-pass-123",
        CONCORD_ELITR_DATA="",
        PYTHONUNBUFFERED="1",
    )
    log_path = var_dir / f"demo-{number}.log"
    with open(log_path, "w+") as log:
        demo = subprocess.Popen(
            [sys.executable, "manage.py", "run_demo", "--no-download", "--port", str(port)],
            cwd=repo,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=ignore_sigint if background else default_sigint,
        )
        result = {"run": number, "delay_s": round(delay, 3)}
        try:
            deadline = time.monotonic() + 300
            printed = ""
            while time.monotonic() < deadline and demo.poll() is None:
                log.seek(0)
                printed = log.read()
                if "Press Ctrl-C" in printed and re.search(r"demo@\S+ ready", printed):
                    break
                time.sleep(0.2)
            else:
                result.update(exit_code=demo.poll(), started=False, clean=False)
                return result
            time.sleep(delay)
            stopped_at = time.monotonic()
            os.killpg(demo.pid, stop_signal)
            try:
                code = demo.wait(timeout=60)
            except subprocess.TimeoutExpired:
                code = None
            result["stop_s"] = round(time.monotonic() - stopped_at, 2)
            time.sleep(0.5)  # let the children's exit settle before looking for them
            left = session_members(demo.pid)
            log.seek(0)
            printed = log.read()
            result.update(
                exit_code=code,
                started=True,
                stopping_printed="Stopping" in printed,
                processes_left=len(left),
                still_serving=serving(f"http://127.0.0.1:{port}/admin/login/"),
            )
            result["clean"] = (
                code == 0
                and result["stopping_printed"]
                and not left
                and not result["still_serving"]
            )
        finally:
            if demo.poll() is None or session_members(demo.pid):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(demo.pid, signal.SIGKILL)
                demo.wait()
            if not result.get("clean"):
                log.seek(0)
                result["output_tail"] = log.read()[-4000:]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument(
        "--burners", type=int, default=os.cpu_count(), help="CPU-burning processes (one per core)"
    )
    parser.add_argument("--signal", choices=["INT", "TERM"], default="INT")
    parser.add_argument("--seed", type=int, default=0, help="for the random delays")
    parser.add_argument("--background", action="store_true", help="start it with SIGINT ignored")
    parser.add_argument("--repo", type=Path, default=REPO, help="the checkout whose demo runs")
    parser.add_argument(
        "--output", type=Path, default=REPO / "benchmarks" / "results" / "demo_interrupt.json"
    )
    args = parser.parse_args()
    stop_signal = getattr(signal, f"SIG{args.signal}")
    delays = random.Random(args.seed)
    burners = [
        subprocess.Popen([sys.executable, "-c", BURN], stdin=subprocess.DEVNULL)
        for _ in range(args.burners)
    ]
    results = []
    try:
        # one scratch folder for every run, as `make demo` keeps var/: the first
        # run migrates and imports, the later ones find everything in place
        with tempfile.TemporaryDirectory(prefix="demo-interrupt-") as scratch:
            for number in range(1, args.runs + 1):
                result = one_run(
                    number,
                    args.repo.resolve(),
                    Path(scratch),
                    stop_signal,
                    delays.uniform(0, 1),
                    args.background,
                )
                results.append(result)
                print(
                    f"run {number:>3}: exit {result.get('exit_code')!s:>4}"
                    f"  stop {result.get('stop_s', '-')!s:>5} s"
                    f"  left {result.get('processes_left', '-')!s:>2}"
                    f"  {'clean' if result['clean'] else 'NOT CLEAN'}",
                    flush=True,
                )
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()

    codes = collections.Counter(str(r.get("exit_code")) for r in results)
    clean = sum(r["clean"] for r in results)
    print()
    started = "started with SIGINT ignored (background)" if args.background else "started plainly"
    print(f"SIG{args.signal} to the demo's process group, {started}, {args.burners} CPU burners")
    header = f"{'exit code':<12}{'runs':>6}"
    print(header)
    print("-" * len(header))
    for code, count in sorted(codes.items()):
        print(f"{code:<12}{count:>6}")
    stops = sorted(r["stop_s"] for r in results if "stop_s" in r)
    if stops:
        print(f"stop time: median {stops[len(stops) // 2]:.2f} s, max {stops[-1]:.2f} s")
    print(f"clean stops: {clean} of {len(results)}")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(
        json.dumps(
            {
                "benchmark": "demo_interrupt",
                "command": "python benchmarks/demo_interrupt.py " + " ".join(sys.argv[1:]),
                "machine": {
                    "python": platform.python_version(),
                    "platform": platform.platform(),
                    "cpus": os.cpu_count(),
                },
                "repo": str(args.repo.resolve()),
                "commit": subprocess.run(
                    ["git", "rev-parse", "--short", "HEAD"],
                    cwd=args.repo,
                    capture_output=True,
                    text=True,
                ).stdout.strip(),
                "signal": f"SIG{args.signal}",
                "background": args.background,
                "burners": args.burners,
                "runs": len(results),
                "exit_codes": dict(codes),
                "clean": clean,
                "results": results,
            },
            indent=2,
        )
    )
    print(f"Wrote {args.output}")
    sys.exit(0 if clean == len(results) else 1)


if __name__ == "__main__":
    main()
