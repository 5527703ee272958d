#!/usr/bin/env python3
"""Loopback stand-ins for the AWS credential endpoints, for nxcc's tests.

One server on 127.0.0.1 answers as
  - EC2 instance metadata, IMDSv2 only: PUT /latest/api/token (needs the TTL
    header), then GET /latest/meta-data/iam/security-credentials/[ROLE]
    (needs the token header; 401 without it, as IMDSv2 does);
  - STS: POST / Action=AssumeRoleWithWebIdentity (checks the web identity
    token against --web-token and the role against --role);
  - ECS container credentials: GET /ecs/creds (checks the Authorization
    header against --ecs-auth).
Each source hands out access key ASIA<SOURCE> (ASIAIMDS, ASIASTS, ASIAECS;
--access-key overrides),
secret --secret and session token tok-<source>-<n>, n counting issues, with
an expiry --expires-in seconds away. Every request is logged to --log.
Prints the port once listening.
"""
import argparse, json, threading, urllib.parse
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ap = argparse.ArgumentParser()
ap.add_argument("--secret", default="S3RVER")
ap.add_argument("--expires-in", type=int, default=3600)
ap.add_argument("--web-token", default="eks-web-identity-token")
ap.add_argument("--role", default="arn:aws:iam::123456789012:role/nxcc-cache")
ap.add_argument("--ecs-auth", default="ecs-secret-auth")
ap.add_argument("--access-key", default=None, help="hand out this key id (s3rver knows only S3RVER)")
ap.add_argument("--log", required=True)
args = ap.parse_args()
lock = threading.Lock()
issued = {"n": 0}
IMDS_TOKEN = "imds-session-token-1"


def creds(source):
    with lock:
        issued["n"] += 1
        n = issued["n"]
    exp = (datetime.now(timezone.utc) + timedelta(seconds=args.expires_in)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"AccessKeyId": args.access_key or "ASIA" + source.upper(), "SecretAccessKey": args.secret,
            "Token": f"tok-{source}-{n}", "Expiration": exp}


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def reply(self, code, body, ctype="application/json"):
        b = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def log(self, what):
        with lock, open(args.log, "a") as f:
            f.write(f"{self.command} {self.path.split('?')[0]} {what}\n")

    def handle_any(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n).decode() if n else ""
        p = self.path.split("?")[0]
        if p == "/latest/api/token" and self.command == "PUT":
            if not self.headers.get("X-aws-ec2-metadata-token-ttl-seconds"):
                self.log("400 no ttl")
                return self.reply(400, "missing TTL", "text/plain")
            self.log("200 token")
            return self.reply(200, IMDS_TOKEN, "text/plain")
        if p.startswith("/latest/meta-data/iam/security-credentials/"):
            if self.headers.get("X-aws-ec2-metadata-token") != IMDS_TOKEN:
                self.log("401 no token (IMDSv1)")
                return self.reply(401, "", "text/plain")
            role = p[len("/latest/meta-data/iam/security-credentials/"):]
            if not role:
                self.log("200 role list")
                return self.reply(200, "nxcc-node-role", "text/plain")
            if role != "nxcc-node-role":
                self.log("404 role")
                return self.reply(404, "", "text/plain")
            c = creds("imds")
            c["Code"] = "Success"
            self.log("200 " + c["Token"])
            return self.reply(200, json.dumps(c))
        if p == "/ecs/creds":
            if self.headers.get("Authorization") != args.ecs_auth:
                self.log("403 bad auth")
                return self.reply(403, "{}")
            c = creds("ecs")
            self.log("200 " + c["Token"])
            return self.reply(200, json.dumps(c))
        if p == "/" and self.command == "POST":
            q = urllib.parse.parse_qs(body)
            get = lambda k: q.get(k, [""])[0]
            if get("Action") != "AssumeRoleWithWebIdentity" or get("WebIdentityToken") != args.web_token \
                    or get("RoleArn") != args.role:
                self.log("403 sts " + get("Action"))
                return self.reply(403, "<ErrorResponse><Error><Code>AccessDenied</Code><Message>Not authorized to "
                                  "perform sts:AssumeRoleWithWebIdentity</Message></Error></ErrorResponse>",
                                  "text/xml")
            c = creds("sts")
            self.log("200 " + c["Token"])
            return self.reply(200, (
                "<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials>"
                f"<AccessKeyId>{c['AccessKeyId']}</AccessKeyId><SecretAccessKey>{c['SecretAccessKey']}"
                f"</SecretAccessKey><SessionToken>{c['Token']}</SessionToken><Expiration>{c['Expiration']}"
                "</Expiration></Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>"),
                "text/xml")
        self.log("404")
        return self.reply(404, "", "text/plain")

    do_GET = do_PUT = do_POST = handle_any


srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
print(srv.server_address[1], flush=True)
srv.serve_forever()
