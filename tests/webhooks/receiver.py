"""A webhook receiver for agentd's tests: every request is verified with the official Standard
Webhooks library (`standardwebhooks`), not with agentd's code, and recorded; a control route sets
the secrets and how the next requests are answered.

    python receiver.py            prints "listening on <port>" once it listens on 127.0.0.1

    POST /control {"secrets": ["whsec_..."], "plan": [{"status": 503, "retry_after": "1",
                   "delay_s": 0}], "default": {"status": 204}}
        `plan` answers the next requests in turn, then `default` answers.
        {"fail_first_run": 500} answers every request of the first run it sees with that status
        (until set to null).
    GET  /received    every request so far: {"path", "id", "timestamp", "verified": [i, ...]
                      (the indexes of the secrets whose verification passed), "error",
                      "answered", "at" (seconds), "event": <body>}
    any other POST    a delivery.
"""

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook

lock = threading.Lock()
state = {"secrets": [], "plan": [], "default": {"status": 204}, "received": [],
         "fail_first_run": None, "failing_run": None}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _body(self):
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length)

    def _answer(self, status, body=b"", headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path != "/received":
            return self._answer(404)
        with lock:
            body = json.dumps(state["received"]).encode()
        self._answer(200, body, [("content-type", "application/json")])

    def do_POST(self):
        body = self._body()
        if self.path == "/control":
            control = json.loads(body)
            with lock:
                for key in ("secrets", "plan", "default", "fail_first_run"):
                    if key in control:
                        state[key] = control[key]
            return self._answer(204)
        headers = {name.lower(): value for name, value in self.headers.items()}
        try:
            event = json.loads(body)
        except ValueError:
            event = None
        run = event.get("run_id") if isinstance(event, dict) else None
        with lock:
            secrets = list(state["secrets"])
            if state["fail_first_run"] and state["failing_run"] is None:
                state["failing_run"] = run
            if state["fail_first_run"] and run == state["failing_run"]:
                answer = {"status": state["fail_first_run"]}
            else:
                answer = state["plan"].pop(0) if state["plan"] else state["default"]
        verified, errors = [], []
        for i, secret in enumerate(secrets):
            try:
                Webhook(secret).verify(body, headers)
                verified.append(i)
            except Exception as error:  # the library's verification error
                errors.append(f"{i}: {error}")
        record = {
            "path": self.path,
            "id": headers.get("webhook-id"),
            "timestamp": headers.get("webhook-timestamp"),
            "traceparent": headers.get("traceparent"),
            "verified": verified,
            "error": "; ".join(errors) or None,
            "answered": answer.get("status", 204),
            "at": time.time(),
            "event": event,
        }
        with lock:
            state["received"].append(record)
        if answer.get("delay_s"):
            time.sleep(answer["delay_s"])
        extra = [(name, answer[key]) for key, name in (("retry_after", "retry-after"), ("location", "location"))
                 if answer.get(key)]
        self._answer(answer.get("status", 204), b"", extra)


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(f"listening on {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
