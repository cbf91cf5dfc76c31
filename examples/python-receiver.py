"""A Hookline receiver in Python, standard library only (docs/receivers.md, "In Python").

    WEBHOOK_SECRET=whsec_... python3 examples/python-receiver.py   # listens on 127.0.0.1:9000

It verifies each delivery as the Standard Webhooks scheme says (and as `verifyWebhookSignature` in
`hookline/sdk` does): HMAC-SHA256 of `<webhook-id>.<webhook-timestamp>.<raw body>` with the secret
(base64, with or without `whsec_`), compared in constant time with each `v1,` candidate of
`webhook-signature`, and the timestamp at most 300 seconds away in either direction.
"""

import base64
import binascii
import hashlib
import hmac
import json
import os
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

TOLERANCE_SECONDS = 300


def verify_webhook_signature(msg_id, timestamp, signature, body, secret, tolerance_seconds=TOLERANCE_SECONDS):
    """True when one `v1,` candidate of `signature` signs `body` (bytes, exactly as received)."""
    if not msg_id or not timestamp or not signature or not secret:
        return False
    try:
        sent_at = int(timestamp)
    except ValueError:
        return False
    if abs(time.time() - sent_at) > tolerance_seconds:
        return False
    secret = secret.strip()
    if secret.startswith("whsec_"):
        secret = secret[len("whsec_"):]
    try:
        key = base64.b64decode(secret + "=" * (-len(secret) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    signed = msg_id.encode() + b"." + timestamp.encode() + b"." + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    candidates = [part[len("v1,"):] for part in signature.split(" ") if part.startswith("v1,")]
    # Compare every candidate, so the time taken does not say which one matched.
    matched = False
    for candidate in candidates:
        matched = hmac.compare_digest(candidate, expected) or matched
    return matched


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", 0)))  # raw bytes, never re-serialised JSON
        valid = verify_webhook_signature(
            self.headers.get("webhook-id"),
            self.headers.get("webhook-timestamp"),
            self.headers.get("webhook-signature"),
            body,
            os.environ["WEBHOOK_SECRET"],
        )
        if not valid:
            self.send_response(400)  # 400, no body
            self.end_headers()
            return
        event = json.loads(body)
        print(self.headers["webhook-id"], event["type"], flush=True)
        self.send_response(204)
        self.end_headers()


if __name__ == "__main__":
    HTTPServer(("127.0.0.1", 9000), Receiver).serve_forever()
