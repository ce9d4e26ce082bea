"""The rule against server-side request forgery, at save time."""

from __future__ import annotations

import pytest

from webhooks.addresses import UnsafeURL, check_url, refused_address


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
