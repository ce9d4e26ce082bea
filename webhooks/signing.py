"""The signature of a delivery, Stripe-like: the header

    Concord-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">

keyed with the endpoint's secret (the whole string, as UTF-8). The receiver
recomputes it over the raw body it received and compares in constant time
(docs/webhooks.md has the snippet). No Django here."""

from __future__ import annotations

import hashlib
import hmac


def signature(secret: str, timestamp: int, body: bytes) -> str:
    signed = str(timestamp).encode("ascii") + b"." + body
    return hmac.new(secret.encode("utf-8"), signed, hashlib.sha256).hexdigest()


def signature_header(secret: str, timestamp: int, body: bytes) -> str:
    return f"t={timestamp},v1={signature(secret, timestamp, body)}"
