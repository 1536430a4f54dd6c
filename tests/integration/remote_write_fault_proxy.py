#!/usr/bin/env python3
"""A remote write receiver that misbehaves on purpose, in front of a real one (the fault tests of
backfill_remote_write_test.cc): `429 N` answers the first N requests 429 Too Many Requests (then
forwards everything), `400 K` answers every K-th request 400 Bad Request and forwards the others.
Usage: remote_write_fault_proxy.py PORT UPSTREAM_URL MODE N. Counts go to stdout at exit."""
import http.server
import signal
import sys
import threading
import urllib.error
import urllib.request

port, upstream, mode, n = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
lock = threading.Lock()
counts = {"requests": 0, "refused": 0, "forwarded": 0}


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 (the http.server API)
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with lock:
            counts["requests"] += 1
            i = counts["requests"]
            refuse = (mode == "429" and i <= n) or (mode == "400" and i % n == 0)
            if refuse:
                counts["refused"] += 1
        if refuse:
            status = int(mode)
            text = b"too many requests\n" if status == 429 else b"bad request: refused by the fault proxy\n"
            self.send_response(status)
            self.send_header("Content-Length", str(len(text)))
            self.end_headers()
            self.wfile.write(text)
            return
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length", "connection")}
        request = urllib.request.Request(upstream, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                status, text = answer.status, answer.read()
        except urllib.error.HTTPError as e:
            status, text = e.code, e.read()
        with lock:
            counts["forwarded"] += 1
        self.send_response(status)
        self.send_header("Content-Length", str(len(text)))
        self.end_headers()
        self.wfile.write(text)

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
print("ready", flush=True)
server.serve_forever()
print(counts, flush=True)
