#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A minimal debuginfod server for tests/integration/debuginfod.sh.

Serves GET /buildid/<hex>/debuginfo from ROOT/<hex>.debug on 127.0.0.1
only (404 for anything else), on a free port that it writes to PORT_FILE
once it listens.  Every request goes to LOG as "METHOD PATH STATUS".  It
stops by itself after LIFETIME seconds, so a test that dies cannot leave
it behind for long.
"""
import argparse
import http.server
import os
import re
import sys
import time

BUILDID_PATH = re.compile(r"/buildid/([0-9a-f]{2,128})/debuginfo")


class Handler(http.server.BaseHTTPRequestHandler):
    def send_status(self, status, body=b""):
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        self.server.log.write("%s %s %d\n" % (self.command, self.path, status))
        self.server.log.flush()

    def do_GET(self):
        m = BUILDID_PATH.fullmatch(self.path)
        if not m:
            self.send_status(404)
            return
        path = os.path.join(self.server.root, m.group(1) + ".debug")
        try:
            with open(path, "rb") as f:
                body = f.read()
        except OSError:
            self.send_status(404)
            return
        self.send_status(200, body)

    do_HEAD = do_GET

    def log_message(self, fmt, *args):
        pass


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--root", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--lifetime", type=float, default=60.0)
    a = ap.parse_args()

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    server.root = a.root
    server.timeout = 0.2
    server.log = open(a.log, "a")
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % server.server_address[1])
    os.rename(tmp, a.port_file)
    deadline = time.monotonic() + a.lifetime
    while time.monotonic() < deadline:
        server.handle_request()
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
