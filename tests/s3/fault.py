#!/usr/bin/env python3
"""A loopback HTTP server that answers every S3 request with one fault, for
tests/e2e/s3_faults.sh. Prints the port once listening. Modes:
  xml200   200 OK, Content-Type application/xml, body an S3 <Error> document
  shortcl  200 OK whose Content-Length is shorter than the body it sends
  stall    accepts the connection and never answers
  drip     announces a 65-byte body (a model.done), then sends one byte a second
  endless  200 OK without Content-Length and a body that never ends
"""
import sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODE = sys.argv[1]


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def body_in(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)

    def any(self):
        self.body_in()
        try:
            if MODE == "stall":
                time.sleep(3600)
            elif MODE == "xml200":
                b = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>InternalError</Code>'
                     b'<Message>We encountered an internal error.</Message></Error>')
                self.send_response(200)
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(b)))
                self.end_headers()
                self.wfile.write(b)
            elif MODE == "shortcl":
                b = b"0" * 64 + b" MODULE_x\n" + b"log of a failed compile\n" * 4
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", "10")
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(b)
                self.close_connection = True
            elif MODE == "drip":
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", "65")  # a model.done
                self.end_headers()
                while True:
                    self.wfile.write(b"x")
                    self.wfile.flush()
                    time.sleep(1)
            elif MODE == "endless":
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                chunk = b"0123456789abcdef" * 4096
                while True:
                    self.wfile.write(chunk)
            self.close_connection = True
        except (BrokenPipeError, ConnectionResetError):
            pass

    do_GET = do_PUT = do_DELETE = do_HEAD = do_POST = any


class S(ThreadingHTTPServer):
    daemon_threads = True


s = S(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
