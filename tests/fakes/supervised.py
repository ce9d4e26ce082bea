"""A stand-in for run_demo, run as a script by tests/test_demo_supervisor.py:
children under a Supervisor, "ready" once they run, "stopping" once asked to
stop or once a child stopped, and exit code 1 naming a crashed child.

    python -m tests.fakes.supervised MODE GRACE_SECONDS

MODE: "sleepers" (two children that run until stopped), "crash" (one of them
exits with code 3 after a moment) or "stubborn" (one ignores SIGTERM and has
a child of its own).
"""

import sys

from demo.supervisor import Supervisor

SLEEPER = [sys.executable, "-c", "import time; time.sleep(120)"]
CRASHER = [sys.executable, "-c", "import sys, time; time.sleep(0.5); sys.exit(3)"]
STUBBORN = [
    sys.executable,
    "-c",
    "import signal, subprocess, sys, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
    "time.sleep(120)\n",
]


def main(mode: str, grace_seconds: float) -> int:
    with Supervisor(grace_seconds=grace_seconds, poll_seconds=0.05) as supervisor:
        supervisor.start("sleeper", SLEEPER)
        second = {"sleepers": SLEEPER, "crash": CRASHER, "stubborn": STUBBORN}[mode]
        supervisor.start(mode, second)
        print("ready", flush=True)
        supervisor.wait()
        crashed = supervisor.crashed_child()
        print("stopping", flush=True)
    if crashed is not None:
        print(f"crashed: {crashed.name} exit code {crashed.exit_code}", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], float(sys.argv[2])))
