"""Which API key a model configuration may send, to which hosts, and which
servers it may call at all.

A researcher writes a judge's or a system's configuration, `base_url` and
`api_key_env` included; the worker that runs it holds the install's secrets in
its environment. Were `api_key_env` read as it stands, a configuration naming
DJANGO_SECRET_KEY (or the lab's OpenAI key) and a server of the researcher's
own would have the worker send that secret there. So the operator lends keys
by name, each to its hosts, in CONCORD_LLM_KEYS:

    OPENAI_API_KEY=api.openai.com;VLLM_TOKEN=vllm.internal:8000,vllm2.internal

A configuration may name only a lent key; the key goes only to its hosts, and
any other server is called with no key (local servers need none). A host
without a port is lent on its scheme's port only (443 for https, 80 for
http). Without the setting, OPENAI_API_KEY is lent to api.openai.com alone.

The worker also requests whatever `base_url` says, from inside the lab's
network. An install shared by teams lists the servers configurations may call
in CONCORD_LLM_HOSTS (`vllm.internal:8000,api.openai.com`; a lent key's hosts
are allowed too); unset, any server may be called, as a single team's install
wants.
"""

from __future__ import annotations

import os
import re
from urllib.parse import urlsplit

SETTING = "CONCORD_LLM_KEYS"
DEFAULT = "OPENAI_API_KEY=api.openai.com"
NAME = re.compile(r"[A-Z_][A-Z0-9_]{0,99}")
HOST = re.compile(r"[a-z0-9.-]{1,253}(:[0-9]{1,5})?|\[[0-9a-f:.]{2,45}\](:[0-9]{1,5})?")
DEFAULT_PORTS = {"http": 80, "https": 443}


class KeyBindingError(ValueError):
    """CONCORD_LLM_KEYS cannot be read; the message names the entry."""


def lent_keys(text: str | None = None) -> dict[str, frozenset[str]]:
    """Key name -> the hosts (lower case, `host` or `host:port`) it is sent to."""
    text = os.environ.get(SETTING, "") if text is None else text
    text = text.strip() or DEFAULT
    lent: dict[str, frozenset[str]] = {}
    for entry in (e.strip() for e in text.split(";")):
        if not entry:
            continue
        name, equals, hosts = entry.partition("=")
        name = name.strip()
        listed = [h.strip().lower() for h in hosts.split(",") if h.strip()]
        if not equals or not NAME.fullmatch(name) or not listed:
            raise KeyBindingError(
                f"{SETTING}: {entry!r} is not NAME=host[,host...] (NAME in capitals)."
            )
        bad = [h for h in listed if not HOST.fullmatch(h)]
        if bad:
            raise KeyBindingError(f"{SETTING}: {bad[0]!r} is not a host or host:port.")
        lent[name] = lent.get(name, frozenset()) | frozenset(listed)
    return lent


def check_key_name(name: str, error: type[Exception]) -> None:
    """A configuration's `api_key_env` must be a lent key (raising `error`)."""
    lent = lent_keys()
    if name not in lent:
        raise error(
            f"api_key_env {name!r}: this install lends {', '.join(sorted(lent))} only "
            f"({SETTING}, set by whoever runs it)."
        )


def sends_key_to(name: str, base_url: str) -> bool:
    """Whether the key `name` may go to the server at `base_url`."""
    return host_listed(lent_keys().get(name, frozenset()), base_url)


def host_listed(hosts: frozenset[str], base_url: str) -> bool:
    """Whether `base_url`'s host (and port) is one of `hosts` (`host`: on its
    scheme's port only; `host:port`)."""
    parts = urlsplit(base_url)
    try:
        host, port = (parts.hostname or "").lower(), parts.port
    except ValueError:  # a port that is not a number
        return False
    if not host:
        return False
    shown = f"[{host}]" if ":" in host else host
    default = DEFAULT_PORTS.get(parts.scheme.lower())
    port = port or default
    # a host without a port: its scheme's port only (https://api.openai.com:8443 is
    # another server)
    return f"{shown}:{port}" in hosts or (port == default and shown in hosts)


# --- the servers a configuration may call ------------------------------------------------

HOSTS_SETTING = "CONCORD_LLM_HOSTS"


def allowed_hosts(text: str | None = None) -> frozenset[str] | None:
    """The hosts (`host` or `host:port`) a configuration may call, from
    CONCORD_LLM_HOSTS (comma-separated); None when unset: any server, as a
    single team's install wants (its researchers are its operators)."""
    text = os.environ.get(HOSTS_SETTING, "") if text is None else text
    listed = [h.strip().lower() for h in text.split(",") if h.strip()]
    if not listed:
        return None
    bad = [h for h in listed if not HOST.fullmatch(h)]
    if bad:
        raise KeyBindingError(f"{HOSTS_SETTING}: {bad[0]!r} is not a host or host:port.")
    return frozenset(listed)


def check_host(base_url: str, error: type[Exception]) -> None:
    """With CONCORD_LLM_HOSTS set, a configuration calls only those hosts (and
    the hosts of lent keys): a researcher's base_url is requested by the
    worker, from inside the lab's network (server-side request forgery)."""
    hosts = allowed_hosts()
    if hosts is None:
        return
    lent = frozenset().union(*lent_keys().values())
    if not host_listed(hosts | lent, base_url):
        raise error(
            f"base_url {base_url!r}: this install calls only {', '.join(sorted(hosts | lent))} "
            f"({HOSTS_SETTING}, set by whoever runs it)."
        )


def key_for(name: str, base_url: str) -> str:
    """The key to send to `base_url`: the environment's value of `name` when it
    is lent to that host, else none."""
    return os.environ.get(name, "") if sends_key_to(name, base_url) else ""
