"""Where a webhook may be sent: the rule against server-side request forgery.

A researcher types the URL and a worker inside the lab's network POSTs to it,
so the URL must not reach what only the worker can reach. Refused:

- any scheme but http and https, a URL without a host, and credentials in the
  URL (user:password@ would end up in logs and exports);
- unless CONCORD_WEBHOOKS_ALLOW_PRIVATE is set: every address that is not
  global (loopback, private, link-local with the cloud metadata address
  169.254.169.254, shared, reserved, unspecified) and multicast, IPv4-mapped
  IPv6 addresses judged as the IPv4 address they hold.

A URL naming such an address literally is refused when it is saved. A host
name is checked when the request is sent, on the address the socket actually
connected to (not on an earlier DNS answer), so a name that resolves to a
public address when saved and to 127.0.0.1 later (DNS rebinding) is refused
too. Redirects are never followed and no proxy from the environment is used.
"""

from __future__ import annotations

import ipaddress
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool


class UnsafeURL(ValueError):
    """A URL or address that a webhook may not be sent to; the message says why."""


def allow_private() -> bool:
    return bool(getattr(settings, "CONCORD_WEBHOOKS_ALLOW_PRIVATE", False))


def refused_address(address: str) -> str:
    """Why an IP address is refused, or "" when it may be reached."""
    if allow_private():
        return ""
    ip = ipaddress.ip_address(address.split("%", 1)[0])  # an IPv6 zone id is not the address
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_multicast or not ip.is_global:
        kind = next(
            (
                name
                for name in ("loopback", "link_local", "unspecified", "multicast", "private")
                if getattr(ip, f"is_{name}")
            ),
            "not global",
        )
        return (
            f"{ip} is a {kind.replace('_', '-')} address: webhooks go to public addresses "
            "only (CONCORD_WEBHOOKS_ALLOW_PRIVATE=1 allows the lab's own network)"
        )
    return ""


def check_url(url: str) -> str:
    """The URL, or UnsafeURL saying why it may not be used (at save time: a
    host name is checked again when each request is sent)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises on a port that is no port)
    except ValueError as error:
        raise UnsafeURL(f"Not a URL: {error}.") from None
    if parts.scheme not in ("http", "https"):
        raise UnsafeURL("A webhook URL starts with http:// or https://.")
    if not parts.hostname:
        raise UnsafeURL("A webhook URL names a host.")
    if parts.username is not None or parts.password is not None:
        raise UnsafeURL(
            "A webhook URL holds no user name or password: the signature proves who sends."
        )
    try:
        literal = ipaddress.ip_address(parts.hostname)
    except ValueError:
        return url  # a name: checked when sent
    reason = refused_address(str(literal))
    if reason:
        raise UnsafeURL(f"Refused: {reason}.")
    return url


class _PeerChecked:
    """A connection that refuses, once connected, a peer address the rule refuses."""

    def _new_conn(self) -> Any:
        sock = super()._new_conn()  # type: ignore[misc]
        peer = sock.getpeername()[0]
        reason = refused_address(peer)
        if reason:
            sock.close()
            raise UnsafeURL(f"Refused: {self.host} connected to {reason}.")  # type: ignore[attr-defined]
        return sock


class CheckedHTTPConnection(_PeerChecked, HTTPConnection):
    pass


class CheckedHTTPSConnection(_PeerChecked, HTTPSConnection):
    pass


class CheckedHTTPPool(HTTPConnectionPool):
    ConnectionCls = CheckedHTTPConnection


class CheckedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = CheckedHTTPSConnection
