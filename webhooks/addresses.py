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
name is not resolved then (the answer would tell a researcher which names
exist inside the lab's network): it is checked when each request is sent.
The connection resolves the name itself, refuses it unless every address it
resolves to is allowed, connects only to those addresses (a second DNS answer
is never asked for, so DNS rebinding cannot slip an internal address in), and
checks the address it reached once more. Nothing inside is ever connected to,
and every refusal there is recorded as the same words (NOT_PUBLIC): a refused,
closed or filtered port, an unknown name and an internal one all read alike.
Redirects are never followed and no proxy from the environment is used.
"""

from __future__ import annotations

import ipaddress
import socket
import sys
from collections.abc import Callable
from urllib.parse import urlsplit

from django.conf import settings
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, NewConnectionError
from urllib3.util.connection import allowed_gai_family, create_connection

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# What an attempt records for any destination the rule refuses when sending.
# Project members read it: one text for all, naming no address, so that it
# cannot map the lab's network.
NOT_PUBLIC = (
    "Refused: the URL's host is not a public address, or does not resolve (webhooks go "
    "to public addresses only; CONCORD_WEBHOOKS_ALLOW_PRIVATE=1 allows the lab's own network)."
)

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


class RefusedAddress(UnsafeURL):
    """A well-formed URL whose host is, or resolves to, an address the rule refuses."""


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
    host name is checked when each request is sent)."""
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
        # it names only what the researcher typed: nothing was resolved or reached
        raise RefusedAddress(f"Refused: {reason}.")
    return url


def public_addresses(host: str, port: int) -> list[str]:
    """Every address `host` resolves to, all of them allowed; RefusedAddress
    (NOT_PUBLIC) when it resolves to none or to any the rule refuses."""
    try:
        found = socket.getaddrinfo(host.strip("[]"), port, allowed_gai_family(), socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        # answered as an internal name is: an unknown name reading otherwise
        # would tell which names exist inside the lab's network
        raise RefusedAddress(NOT_PUBLIC) from None
    addresses = list(dict.fromkeys(str(entry[4][0]) for entry in found))
    # a name that also points inward is no public receiver, whichever address answers
    if not addresses or any(refused_address(address) for address in addresses):
        raise RefusedAddress(NOT_PUBLIC)
    return addresses


def connect_to_public(conn: HTTPConnection) -> socket.socket:
    """A socket to the first of the host's checked addresses that accepts,
    failing as urllib3's own connections fail (the host's addresses are public:
    what went wrong may be said)."""
    port = int(conn.port or conn.default_port)
    failure = OSError("no address")  # stays so never: public_addresses names one at least
    for address in public_addresses(conn._dns_host, port):
        try:
            sock = create_connection(
                (address, port),
                conn.timeout,
                source_address=conn.source_address,
                socket_options=conn.socket_options,
            )
        except OSError as error:
            failure = error
            continue
        sys.audit("http.client.connect", conn, conn.host, port)
        return sock
    if isinstance(failure, TimeoutError):
        raise ConnectTimeoutError(
            conn, f"Connection to {conn.host} timed out. (connect timeout={conn.timeout})"
        ) from failure
    raise NewConnectionError(conn, f"Failed to establish a new connection: {failure}") from failure


def checked_socket(
    conn: HTTPConnection, connect_as_usual: Callable[[], socket.socket]
) -> socket.socket:
    """The connection's socket, to an address the rule allows."""
    sock = connect_as_usual() if allow_private() else connect_to_public(conn)
    # the address reached, checked once more: the rule holds whatever resolved it
    if refused_address(sock.getpeername()[0]):
        sock.close()
        raise RefusedAddress(NOT_PUBLIC)
    return sock


class CheckedHTTPConnection(HTTPConnection):
    def _new_conn(self) -> socket.socket:
        return checked_socket(self, super()._new_conn)


class CheckedHTTPSConnection(HTTPSConnection):
    def _new_conn(self) -> socket.socket:
        return checked_socket(self, super()._new_conn)


class CheckedHTTPPool(HTTPConnectionPool):
    ConnectionCls = CheckedHTTPConnection


class CheckedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = CheckedHTTPSConnection
