"""Where a webhook may be sent: the rule against server-side request forgery.

A researcher types the URL and a worker inside the lab's network POSTs to it,
so the URL must not reach what only the worker can reach. Refused:

- any scheme but http and https, a URL without a host, and credentials in the
  URL (user:password@ would end up in logs and exports);
- unless CONCORD_WEBHOOKS_ALLOW_PRIVATE is set: every address that is not
  global (loopback, private, link-local with the cloud metadata address
  169.254.169.254, shared, reserved, unspecified, IPv6 site-local) and
  multicast. An IPv6 address that carries an IPv4 address which a translator
  or tunnel delivers to (IPv4-mapped, SIIT, NAT64, 6to4, IPv4-compatible) is
  judged as that IPv4 address: 64:ff9b::a9fe:a9fe is 169.254.169.254.

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

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# IPv6 prefixes whose addresses carry an IPv4 address that a dual-stack socket,
# a translator or a tunnel delivers to, each with how far the IPv4 address is
# shifted from the low bits.
IPV4_CARRIERS = (
    (ipaddress.IPv6Network("::ffff:0:0/96"), 0),  # IPv4-mapped (RFC 4291)
    (ipaddress.IPv6Network("::ffff:0:0:0/96"), 0),  # SIIT, IPv4-translated (RFC 2765)
    (ipaddress.IPv6Network("64:ff9b::/96"), 0),  # NAT64, the well-known prefix (RFC 6052)
    (ipaddress.IPv6Network("::/96"), 0),  # IPv4-compatible (RFC 4291, deprecated)
    (ipaddress.IPv6Network("2002::/16"), 80),  # 6to4: 2002:AABB:CCDD::/48 (RFC 3056)
)
# NAT64's local-use prefix (RFC 8215): where the IPv4 address sits in it depends
# on the prefix length the lab's own translator uses (RFC 6052 allows /48 to
# /96), so no one reading of it is safe; it is not globally reachable anyway.
LOCAL_USE_NAT64 = ipaddress.IPv6Network("64:ff9b:1::/48")


class UnsafeURL(ValueError):
    """A URL or address that a webhook may not be sent to; the message says why."""


def allow_private() -> bool:
    return bool(getattr(settings, "CONCORD_WEBHOOKS_ALLOW_PRIVATE", False))


def carried_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address a packet to `ip` ends up at, where `ip` carries one."""
    if ip.is_loopback or ip.is_unspecified:  # ::1 and :: are IPv6's own, not 0.0.0.1 and 0.0.0.0
        return None
    for prefix, shift in IPV4_CARRIERS:
        if ip in prefix:
            return ipaddress.IPv4Address((int(ip) >> shift) & 0xFFFF_FFFF)
    return None


def refused_kind(ip: IPAddress) -> str:
    """What kind of address the rule refuses `ip` as, or "" when it may be reached."""
    if isinstance(ip, ipaddress.IPv6Address) and ip in LOCAL_USE_NAT64:
        return "local-use NAT64"
    if not (ip.is_multicast or not ip.is_global or getattr(ip, "is_site_local", False)):
        return ""
    names = ("loopback", "link_local", "site_local", "unspecified", "multicast", "private")
    kind = next((name for name in names if getattr(ip, f"is_{name}", False)), "not global")
    return kind.replace("_", "-")


def refused_address(address: str) -> str:
    """Why an IP address is refused, or "" when it may be reached."""
    if allow_private():
        return ""
    ip = ipaddress.ip_address(address.split("%", 1)[0])  # an IPv6 zone id is not the address
    judged: IPAddress = ip
    if isinstance(ip, ipaddress.IPv6Address):
        judged = carried_ipv4(ip) or ip
    kind = refused_kind(judged)
    if not kind:
        return ""
    held = f" (carried by {ip})" if judged != ip else ""
    return (
        f"{judged} is a {kind} address{held}: webhooks go to public addresses only "
        "(CONCORD_WEBHOOKS_ALLOW_PRIVATE=1 allows the lab's own network)"
    )


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
