#!/usr/bin/env python3
"""A remote write receiver that misbehaves on purpose, in front of a real one (the fault tests of
backfill_remote_write_test.cc): `429 N` answers the first N requests 429 Too Many Requests (then
forwards everything), `400 K` answers every K-th request 400 Bad Request and forwards the others,
`400series NAME` answers 400 to every request holding the bytes NAME (a metric name or label value)
and forwards the others, `retryafter N` answers the first N requests 429 with `Retry-After: 2` and
prints, for each request that repeats a refused body, `retry_gap_ms MS` since its refusal; `bearer TOKEN`
answers 401 Unauthorized to every request whose Authorization header is not `Bearer TOKEN` (as an
authenticating gateway in front of Mimir or VictoriaMetrics does) and forwards the others.
Usage: remote_write_fault_proxy.py PORT UPSTREAM_URL MODE N_OR_NAME. Counts go to stdout at exit."""
import hashlib
import http.server
import time
import signal
import sys
import threading
import urllib.error
import urllib.request

port, upstream, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3]
n = 0 if mode in ("400series", "bearer") else int(sys.argv[4])
needle = sys.argv[4].encode() if mode == "400series" else b""
token = sys.argv[4] if mode == "bearer" else ""
lock = threading.Lock()
counts = {"requests": 0, "refused": 0, "forwarded": 0, "refused_samples": 0}
refused_at = {}  # retryafter: body digest -> time of its refusal


def unsnappy(b):
    """Snappy block format (the remote write body), decoded without a library."""
    i = 0
    while b[i] & 0x80:  # the uncompressed length, a varint: not needed
        i += 1
    i += 1
    out = bytearray()
    while i < len(b):
        tag = b[i]
        i += 1
        kind = tag & 3
        if kind == 0:
            length = tag >> 2
            if length >= 60:
                extra = length - 59
                length = int.from_bytes(b[i:i + extra], "little")
                i += extra
            length += 1
            out += b[i:i + length]
            i += length
            continue
        if kind == 1:
            length, offset = ((tag >> 2) & 7) + 4, ((tag >> 5) << 8) | b[i]
            i += 1
        elif kind == 2:
            length, offset = (tag >> 2) + 1, int.from_bytes(b[i:i + 2], "little")
            i += 2
        else:
            length, offset = (tag >> 2) + 1, int.from_bytes(b[i:i + 4], "little")
            i += 4
        start = len(out) - offset
        if offset >= length:
            out += out[start:start + length]
        else:
            for k in range(length):
                out.append(out[start + k])
    return bytes(out)


def count_samples(raw):
    """The samples of a WriteRequest (field 1 TimeSeries, its field 2 Sample), read by hand."""
    def fields(buf):
        j = 0
        while j < len(buf):
            key, j = varint(buf, j)
            if key & 7 == 2:
                size, j = varint(buf, j)
                yield key >> 3, buf[j:j + size]
                j += size
            elif key & 7 == 0:
                _, j = varint(buf, j)
            elif key & 7 == 1:
                j += 8
            else:
                j += 4

    def varint(buf, j):
        value, shift = 0, 0
        while True:
            c = buf[j]
            j += 1
            value |= (c & 0x7F) << shift
            shift += 7
            if c < 0x80:
                return value, j

    return sum(1 for f, ts in fields(raw) if f == 1 for g, _ in fields(ts) if g == 2)


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 (the http.server API)
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        raw = unsnappy(body) if mode == "400series" else b""
        digest = hashlib.sha256(body).hexdigest()
        with lock:
            counts["requests"] += 1
            i = counts["requests"]
            refuse = ((mode in ("429", "retryafter") and i <= n) or (mode == "400" and i % n == 0) or
                      (mode == "400series" and needle in raw) or
                      (mode == "bearer" and self.headers.get("Authorization", "") != "Bearer " + token))
            if refuse:
                counts["refused"] += 1
                if mode == "400series":
                    counts["refused_samples"] += count_samples(raw)
                    print("refused", counts["refused"], "requests", counts["refused_samples"], "samples", flush=True)
            if mode == "retryafter":
                if digest in refused_at:
                    print("retry_gap_ms", int((time.monotonic() - refused_at.pop(digest)) * 1000), flush=True)
                if refuse:
                    refused_at[digest] = time.monotonic()
        if refuse:
            status = 429 if mode in ("429", "retryafter") else 401 if mode == "bearer" else 400
            text = (b"too many requests\n" if status == 429 else b"unauthorized: no valid bearer token\n" if status == 401
                    else b"bad request: refused by the fault proxy\n")
            if mode == "400series":  # as a real receiver names the series it refuses
                text = b"bad request: refused by the fault proxy: series " + needle + b"\n"
            self.send_response(status)
            if mode == "retryafter":
                self.send_header("Retry-After", "2")
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
