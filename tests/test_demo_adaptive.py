"""The adaptive loop end to end in the demo, behind its switch: `run_demo
--simulated-participants` starts the web server, the worker (with its beat)
and the fake Prolific server with bots; a researcher signs in and starts the
demo's adaptive study, and the worker, the bots and Prolific's side carry it
to its answer with no one touching it again."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time

import requests

from tests.conftest import ELITR_DATA, REPO, require
from tests.processes import free_port, session_processes
from tests.test_demo import demo_environment, wait_for


def sign_in(session: requests.Session, base: str, password: str) -> None:
    page = session.get(f"{base}/admin/login/", timeout=10)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)[1]
    answer = session.post(
        f"{base}/admin/login/",
        data={"username": "admin", "password": password, "csrfmiddlewaretoken": token},
        headers={"Referer": f"{base}/admin/login/"},
        timeout=10,
    )
    assert answer.ok and ("Log out" in answer.text or "Sign out" in answer.text)


def test_the_demo_runs_an_adaptive_study_with_simulated_participants(tmp_path):
    require((ELITR_DATA / "data.zip").is_file(), "the demo's adaptive study needs the paper data")
    port = free_port()
    env = demo_environment(
        tmp_path, CONCORD_ELITR_DATA=str(ELITR_DATA), CONCORD_DEMO_BOT_SECONDS="0.2"
    )
    command = [sys.executable, "manage.py", "run_demo", "--no-download", "--port", str(port)]
    command.append("--simulated-participants")
    log = open(tmp_path / "demo.log", "w+")  # noqa: SIM115 (closed below)
    demo = subprocess.Popen(
        command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(f"{base}/admin/login/", 180)
        deadline = time.monotonic() + 60
        printed = ""
        while "Press Ctrl-C" not in printed and time.monotonic() < deadline:
            time.sleep(0.2)
            log.seek(0)
            printed = log.read()
        assert "SIMULATED PARTICIPANTS ON" in printed, printed
        assert "(demo study planned)" in printed, printed
        session = requests.Session()
        sign_in(session, base, "demo-pass-123")
        listing = session.get(f"{base}/console/adaptive/", timeout=10).text
        path = re.search(r'href="(/console/adaptive/\d+/)">Demo: adaptive', listing)[1]
        # the first page a researcher opens loads the statistics modules in the
        # server; on a loaded CI machine that alone has taken over 10 s
        page = session.get(base + path, timeout=60).text
        assert "Demo: simulated participants are on." in page
        token = session.cookies["csrftoken"]
        started = session.post(
            f"{base}{path}start/",
            data={"csrfmiddlewaretoken": token},
            headers={"Referer": base + path},
            timeout=30,
        )
        assert started.ok and 'id="adaptive-status">Running' in started.text, started.text[-3000:]
        # from here on only the worker, its beat and the bots act
        deadline = time.monotonic() + 420
        live = ""
        while time.monotonic() < deadline:
            live = session.get(f"{base}{path}?live=1", timeout=30).text
            if 'id="adaptive-status">Finished' in live:
                break
            time.sleep(2)
        log.seek(0)
        assert 'id="adaptive-status">Finished' in live, live[-3000:] + log.read()[-5000:]
        assert "Answered:" in live and "Stopped: the goal is met" in live
        # the worker pays the bonus and sends the message once the study is closed
        deadline = time.monotonic() + 60
        page = ""
        while "Message sent" not in page and time.monotonic() < deadline:
            time.sleep(1)
            page = session.get(base + path, timeout=60).text
        assert "Bonus paid" in page and "Message sent" in page, page[-3000:]
        assert "Prolific refused" not in page, page[page.find("adaptive-decisions") :]
        os.killpg(demo.pid, signal.SIGINT)
        assert demo.wait(timeout=60) == 0
    except BaseException:
        # whatever failed (a page that did not answer, a process that stopped),
        # the demo's own log says why: pytest prints it under the failure
        log.seek(0)
        print(log.read()[-20000:])
        raise
    finally:
        for pid in session_processes(demo.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        demo.wait()
        log.close()
