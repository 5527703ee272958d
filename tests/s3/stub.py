#!/usr/bin/env python3
"""A tiny in-memory S3 on 127.0.0.1 for nxcc's tests.

Unlike s3rver it verifies every request's AWS SigV4 signature, recomputed
here from the request as received (canonical request, string to sign,
derived key), so a signing mistake in nxcc fails the test with 403.
--fail-first N answers the first N requests with 503 SlowDown (retry tests);
--forbid answers everything with 403 AccessDenied.
Prints the port on stdout once listening. Secret: $STUB_SECRET (default S3RVER).
"""
import argparse, hashlib, hmac, os, sys, threading, urllib.parse
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ap = argparse.ArgumentParser()
ap.add_argument("--fail-first", type=int, default=0)
ap.add_argument("--forbid", action="store_true")
ap.add_argument("--buckets", default=None, help="comma list: other buckets answer 404 NoSuchBucket")
ap.add_argument("--log", default=None, help="append one line per request here")
args = ap.parse_args()
SECRET = os.environ.get("STUB_SECRET", "S3RVER")
objects = {}
lock = threading.Lock()
count = {"n": 0, "bad_sig": 0}


def hm(key, msg):
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def check_sig(method, raw_path, headers, body):
    """Returns None when the SigV4 signature is right, else why not."""
    auth = headers.get("Authorization")
    if not auth or not auth.startswith("AWS4-HMAC-SHA256 "):
        return "no SigV4 Authorization header"
    parts = dict(p.strip().split("=", 1) for p in auth[len("AWS4-HMAC-SHA256 "):].split(","))
    cred = parts["Credential"].split("/")
    _, date, region, service, _ = cred
    signed = parts["SignedHeaders"].split(";")
    payload_hash = headers.get("x-amz-content-sha256")
    if payload_hash is None:
        return "missing x-amz-content-sha256"
    if payload_hash != "UNSIGNED-PAYLOAD" and payload_hash != hashlib.sha256(body).hexdigest():
        return "x-amz-content-sha256 does not match the body"
    if "x-amz-content-sha256" not in signed:
        return "x-amz-content-sha256 not signed"
    path, _, query = raw_path.partition("?")
    # canonical query: decode, re-encode strictly, sort
    q = []
    for kv in query.split("&") if query else []:
        k, _, v = kv.partition("=")
        k = urllib.parse.quote(urllib.parse.unquote(k), safe="-_.~")
        v = urllib.parse.quote(urllib.parse.unquote(v), safe="-_.~")
        q.append((k, v))
    cq = "&".join(f"{k}={v}" for k, v in sorted(q))
    cpath = urllib.parse.quote(urllib.parse.unquote(path), safe="/-_.~")
    ch = "".join(f"{h}:{' '.join(headers.get(h, '').strip().split())}\n" for h in signed)
    creq = "\n".join([method, cpath, cq, ch, ";".join(signed), payload_hash])
    amz_date = headers.get("x-amz-date")
    sts = "\n".join(["AWS4-HMAC-SHA256", amz_date, f"{date}/{region}/{service}/aws4_request",
                     hashlib.sha256(creq.encode()).hexdigest()])
    k = hm(hm(hm(hm(("AWS4" + SECRET).encode(), date), region), service), "aws4_request")
    want = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
    if want != parts["Signature"]:
        return f"signature mismatch; canonical request was:\n{creq}"
    return None


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def reply(self, code, body=b"", ctype="application/xml"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def err(self, code, c, msg):
        self.reply(code, f"<?xml version=\"1.0\"?><Error><Code>{c}</Code><Message>{msg}</Message></Error>".encode())

    def handle_any(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        with lock:
            count["n"] += 1
            nth = count["n"]
        if args.log:
            with open(args.log, "a") as f:
                auth = self.headers.get("Authorization") or ""
                akid = auth.split("Credential=", 1)[1].split("/", 1)[0] if "Credential=" in auth else "-"
                tok = self.headers.get("x-amz-security-token") or "-"
                f.write(f"{nth} {self.command} {self.path} key={akid} token={tok}\n")
        if nth <= args.fail_first:
            return self.err(503, "SlowDown", "Please reduce your request rate.")
        if args.forbid:
            return self.err(403, "AccessDenied", "Access Denied")
        why = check_sig(self.command, self.path, self.headers, body)
        if why:
            count["bad_sig"] += 1
            sys.stderr.write(f"stub: {self.command} {self.path}: {why}\n")
            return self.err(403, "SignatureDoesNotMatch", why.split("\n")[0])
        path, _, query = self.path.partition("?")
        parts = urllib.parse.unquote(path).lstrip("/").split("/", 1)
        bucket, key = parts[0], parts[1] if len(parts) > 1 else ""
        if args.buckets and bucket not in args.buckets.split(","):
            return self.err(404, "NoSuchBucket", "The specified bucket does not exist")
        if self.command == "PUT":
            objects[(bucket, key)] = (body, datetime.now(timezone.utc))
            return self.reply(200)
        if self.command in ("GET", "HEAD") and key:
            o = objects.get((bucket, key))
            if not o:
                return self.err(404, "NoSuchKey", "The specified key does not exist.")
            return self.reply(200, o[0], "application/octet-stream")
        if self.command == "DELETE":
            objects.pop((bucket, key), None)
            return self.reply(204)
        if self.command == "GET":
            qs = urllib.parse.parse_qs(query)
            prefix = qs.get("prefix", [""])[0]
            items = "".join(
                f"<Contents><Key>{k}</Key><Size>{len(v[0])}</Size>"
                f"<LastModified>{v[1].strftime('%Y-%m-%dT%H:%M:%S.000Z')}</LastModified></Contents>"
                for (b, k), v in sorted(objects.items()) if b == bucket and k.startswith(prefix))
            return self.reply(200, f"<ListBucketResult><IsTruncated>false</IsTruncated>{items}</ListBucketResult>".encode())
        return self.err(405, "MethodNotAllowed", self.command)

    do_GET = do_PUT = do_HEAD = do_DELETE = handle_any


srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
print(srv.server_address[1], flush=True)
srv.serve_forever()
