#!/usr/bin/python3
"""A local HTTP server for the credential helper's end-to-end test.

Serves a directory (a bare repository prepared for git's "dumb" HTTP protocol)
and requires HTTP basic auth. The accepted user and password are read from
PASSWORD_FILE ("user:password") on every request, so a test can change the
server's password while it runs. Each request's outcome is appended to LOG
("200 user", "401 none", "401 wrong user") so the test can count them.

usage: basic-auth-server.py ROOT PASSWORD_FILE PORT_FILE LOG
The chosen port is written to PORT_FILE once the server listens.
"""
import base64
import http.server
import os
import sys

root, password_file, port_file, log_path = sys.argv[1:5]


class Handler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, directory=root, **kwargs)

    def log_message(self, format, *args):
        pass  # the outcome log below is what the test reads

    def note(self, text):
        with open(log_path, "a") as log:
            log.write(text + "\n")

    def authorized(self):
        with open(password_file) as f:
            expected = f.read().strip()
        header = self.headers.get("Authorization", "")
        if not header.startswith("Basic "):
            self.note("401 none")
            return False
        try:
            given = base64.b64decode(header[6:]).decode("utf-8")
        except Exception:
            self.note("401 malformed")
            return False
        user = given.split(":", 1)[0]
        if given != expected:
            self.note("401 wrong " + user)
            return False
        self.note("200 " + user)
        return True

    def do_GET(self):
        if not self.authorized():
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="secitem test"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        super().do_GET()

    def do_HEAD(self):
        self.do_GET()


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
tmp = port_file + ".tmp"
with open(tmp, "w") as f:
    f.write(str(server.server_address[1]))
os.rename(tmp, port_file)
server.serve_forever()
