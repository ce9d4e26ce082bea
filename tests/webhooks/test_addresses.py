"""The rule against server-side request forgery: the addresses it refuses,
URLs at save time, a host's resolved addresses when sending."""

from __future__ import annotations

import socket

import pytest

from webhooks.addresses import (
    NOT_PUBLIC,
    RefusedAddress,
    UnsafeURL,
    check_url,
    public_addresses,
    refused_address,
)


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("ftp://example.org/x", "starts with http:// or https://"),
        ("file:///etc/passwd", "starts with http:// or https://"),
        ("gopher://example.org:70/", "starts with http:// or https://"),
        ("http:///path", "names a host"),
        ("https://user:pw@example.org/", "no user name or password"),
        ("http://example.org:99999/", "Not a URL"),
        ("http://127.0.0.1:6379/", "loopback"),
        ("http://10.0.0.5/", "private"),
        ("http://192.168.1.10/", "private"),
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
        ("http://[::1]/", "loopback"),
        ("http://[::ffff:127.0.0.1]/", "127.0.0.1 is a loopback"),
        ("http://[64:ff9b::a9fe:a9fe]/", "169.254.169.254 is a link-local"),
        ("http://[fec0::1]/", "site-local"),
        ("http://0.0.0.0/", "unspecified"),
        ("http://100.64.0.1/", "not global"),
        ("http://224.0.0.1/", "multicast"),
    ],
)
def test_refused(url, reason, settings):
    settings.CONCORD_WEBHOOKS_ALLOW_PRIVATE = False
    with pytest.raises(UnsafeURL, match=reason):
        check_url(url)


def test_public_and_named_hosts_pass_at_save_time(settings):
    settings.CONCORD_WEBHOOKS_ALLOW_PRIVATE = False
    assert check_url("https://hooks.example.org/concord?x=1")
    assert check_url("http://93.184.216.34:8080/")
    assert check_url("http://localhost:8000/")  # a name: checked on the address it reaches
    assert refused_address("93.184.216.34") == ""


def test_the_setting_allows_the_labs_own_network(settings):
    settings.CONCORD_WEBHOOKS_ALLOW_PRIVATE = True
    assert check_url("http://127.0.0.1:9000/hook")
    assert check_url("http://10.1.2.3/hook")
    with pytest.raises(UnsafeURL):
        check_url("ftp://10.1.2.3/")  # the scheme still counts


# IPv6 addresses that reach an internal IPv4 address (through a dual-stack
# socket, a NAT64 or SIIT translator, a 6to4 or IPv4-compatible tunnel) or an
# IPv6 site; ipaddress calls the first nine global on Python 3.11 (and the
# multicast ff02::1).
INTERNAL_IPV6 = [
    "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254, the cloud metadata service
    "64:ff9b::a00:1",  # NAT64 of 10.0.0.1
    "::7f00:1",  # IPv4-compatible 127.0.0.1
    "2002:a9fe:a9fe::",  # 6to4 through 169.254.169.254
    "2002:c0a8:101::1",  # 6to4 through 192.168.1.1
    "::ffff:0:a00:1",  # SIIT 10.0.0.1
    "fec0::1",  # site-local (deprecated, still routed by some networks)
    "64:ff9b:1::a00:1",  # NAT64 local-use prefix: where its IPv4 address sits is the lab's choice
    "64:ff9b:1::5db8:d822",
    "::ffff:10.0.0.1",
    "::ffff:169.254.169.254",
    "::1",
    "::",
    "fe80::1%eth0",
    "fc00::1",
    "2001::1",  # Teredo
    "ff02::1",
]


@pytest.mark.parametrize("address", INTERNAL_IPV6)
def test_addresses_that_reach_inside_are_refused(address, settings):
    settings.CONCORD_WEBHOOKS_ALLOW_PRIVATE = False
    assert refused_address(address)
    with pytest.raises(UnsafeURL, match="webhooks go to public addresses only"):
        check_url(f"http://[{address.replace('%', '%25')}]:8080/hook")


@pytest.mark.parametrize(
    "address",
    [
        "93.184.216.34",
        "2606:2800:220:1:248:1893:25c8:1946",
        "64:ff9b::5db8:d822",  # NAT64 of 93.184.216.34
        "2002:5db8:d822::1",  # 6to4 through 93.184.216.34
        "::ffff:93.184.216.34",
        "::ffff:0:5db8:d822",
    ],
)
def test_public_addresses_pass_in_every_form(address, settings):
    settings.CONCORD_WEBHOOKS_ALLOW_PRIVATE = False
    assert refused_address(address) == ""
    assert check_url(f"http://[{address}]/hook" if ":" in address else f"http://{address}/")


def test_the_setting_allows_carried_addresses_too(settings):
    settings.CONCORD_WEBHOOKS_ALLOW_PRIVATE = True
    assert all(refused_address(address) == "" for address in INTERNAL_IPV6)


def test_names_are_not_resolved_at_save_time(settings, monkeypatch):
    """The answer to saving a URL cannot tell which names exist inside."""
    settings.CONCORD_WEBHOOKS_ALLOW_PRIVATE = False

    def no_lookup(*args, **kwargs):
        raise AssertionError("a name was resolved at save time")

    monkeypatch.setattr(socket, "getaddrinfo", no_lookup)
    for url in ("http://db:5432/", "http://localhost:6379/", "http://no-such-host.invalid/"):
        assert check_url(url) == url


def resolving(monkeypatch, answers: dict[str, list[str]]) -> None:
    """DNS as a name's owner may set it: each name resolves to `answers[name]`."""
    real = socket.getaddrinfo

    def getaddrinfo(host, port, family=0, type=0, proto=0, flags=0):
        if host not in answers:
            return real(host, port, family, type, proto, flags)
        return [
            (socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port))
            for a in answers[host]
        ]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


def test_a_name_is_refused_when_any_of_its_addresses_is(settings, monkeypatch):
    settings.CONCORD_WEBHOOKS_ALLOW_PRIVATE = False
    resolving(
        monkeypatch,
        {
            "public.example": ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"],
            "mixed.example": ["93.184.216.34", "10.0.0.1"],
            "nat64.example": ["64:ff9b::a9fe:a9fe"],
            "nowhere.example": [],
        },
    )
    assert public_addresses("public.example", 443) == [
        "93.184.216.34",
        "2606:2800:220:1:248:1893:25c8:1946",
    ]
    for host in ("mixed.example", "nat64.example", "nowhere.example", "no-such-host.invalid"):
        with pytest.raises(RefusedAddress) as refused:
            public_addresses(host, 443)
        assert str(refused.value) == NOT_PUBLIC
