"""A real OpenID Connect provider on 127.0.0.1 for the sign-in tests: panva's
oidc-provider (a certified implementation: discovery, JWKS, the authorization
code flow, RS256 id tokens, userinfo), run by tests/users/oidc_provider/server.mjs.

Its npm package is installed on first use from the lock file beside the script
into a cache folder (CONCORD_TEST_NPM_CACHE, default ~/.cache/concord-tests),
one folder per content of package.json, the lock and the script; nothing of it
is in the repository but those three files. Without node and npm, or without
the npm registry, the tests skip with the reason (fail under
CONCORD_REQUIRE_SERVICES=1)."""

from __future__ import annotations

import hashlib
import json
import os
import queue
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import require

SOURCE = Path(__file__).resolve().parent / "oidc_provider"
FILES = ("package.json", "package-lock.json", "server.mjs")
CACHE = Path(os.environ.get("CONCORD_TEST_NPM_CACHE") or Path.home() / ".cache" / "concord-tests")
NODE_MAJOR = 20  # oidc-provider 9 runs on it (it warns that it prefers 22)
CLIENT_ID = "concord-test"
CLIENT_SECRET = "concord-test-secret-0123456789"


def installed_provider() -> Path:
    """The folder with server.mjs and its node_modules, installed if need be."""
    node, npm = shutil.which("node"), shutil.which("npm")
    require(
        bool(node and npm), "node and npm are not installed (the test OIDC provider runs on node)"
    )
    assert node and npm
    version = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30)
    major = re.match(r"v(\d+)", version.stdout.strip())
    require(
        bool(major and int(major.group(1)) >= NODE_MAJOR),
        f"node {version.stdout.strip()} is older than {NODE_MAJOR} (oidc-provider 9 needs it)",
    )
    digest = hashlib.sha256(b"".join((SOURCE / name).read_bytes() for name in FILES))
    folder = CACHE / f"oidc-provider-{digest.hexdigest()[:16]}"
    if (folder / "node_modules" / "oidc-provider" / "package.json").is_file():
        return folder
    CACHE.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="oidc-provider-", dir=CACHE))
    for name in FILES:
        shutil.copy(SOURCE / name, scratch / name)
    try:
        result = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"],
            cwd=scratch,
            capture_output=True,
            text=True,
            timeout=300,
        )
    except subprocess.TimeoutExpired:
        result = None
    if result is None or result.returncode != 0:
        shutil.rmtree(scratch, ignore_errors=True)
        tail = "timed out after 300 s" if result is None else result.stderr.strip()[-500:]
        require(False, f"npm could not install the test OIDC provider (npm ci: {tail})")
    try:
        scratch.rename(folder)  # another test run may have installed it meanwhile
    except OSError:
        shutil.rmtree(scratch, ignore_errors=True)
    return folder


@dataclass
class Provider:
    issuer: str
    accounts_file: Path

    def set_accounts(self, accounts: dict[str, dict]) -> None:
        """Account id (the `sub`) -> its claims; read again at every sign-in."""
        self.accounts_file.write_text(json.dumps(accounts))


@contextmanager
def running_provider(redirect_uri: str, folder: Path, work: Path) -> Iterator[Provider]:
    accounts = work / "accounts.json"
    accounts.write_text("{}")
    config = work / "config.json"
    config.write_text(
        json.dumps(
            {
                "client_id": CLIENT_ID,
                "client_secret": CLIENT_SECRET,
                "redirect_uris": [redirect_uri],
                "accounts_file": str(accounts),
            }
        )
    )
    log = (work / "provider.log").open("w")
    process = subprocess.Popen(
        ["node", str(folder / "server.mjs"), str(config)],
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    assert process.stdout is not None
    stdout = process.stdout
    threading.Thread(target=lambda: lines.put(stdout.readline()), daemon=True).start()
    try:
        try:
            first = lines.get(timeout=30)
        except queue.Empty:
            first = ""
        if not first:
            log.flush()
            raise RuntimeError(
                f"the test OIDC provider did not start: {(work / 'provider.log').read_text()}"
            )
        yield Provider(issuer=json.loads(first)["issuer"], accounts_file=accounts)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def switch_oidc_on(settings, env: dict[str, str]):
    """What the settings module does when OIDC_RP_CLIENT_ID is set, done to the
    test's settings (pytest-django's `settings` fixture restores them)."""
    from users.oidc.config import from_environment

    config = from_environment(env)
    assert config is not None
    settings.CONCORD_OIDC = config
    settings.AUTHENTICATION_BACKENDS = [
        "django.contrib.auth.backends.ModelBackend",
        "users.backends.SiteAdminPermissions",
        "users.oidc.backend.OIDCBackend",
    ]
    for name, value in config.django_settings().items():
        setattr(settings, name, value)
    return config
