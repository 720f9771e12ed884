#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# A TCP proxy in front of a real server that holds back one command until
# the test lets it go, so that the test can change the server's state in
# a client's window between two of its commands (tests/cli-lock-facts.sh,
# break).
#
#   hold-proxy.py DIR UPSTREAM-PORT WHEN
#
# It listens on a free loopback port, written to DIR/port once it
# listens.  WHEN is a command name (GET: the first GET any connection
# sends) or "after:NAME" (the first command sent after the first
# NAME, on any connection).  That command, and all its connection sends after
# it, wait: the proxy creates DIR/held, then goes on when DIR/go exists.
# One command is held in the proxy's life; the rest pass as they come,
# replies always.
import os
import socket
import sys
import threading
import time

dirname, upstream, when = sys.argv[1], int(sys.argv[2]), sys.argv[3].encode().upper()
after = when.startswith(b"AFTER:")
target = when[6:] if after else when
held_once = threading.Lock()
spent, seen = [False], [False]


def command(buf):
    """The name and length of the first whole command in buf (RESP
    arrays of bulk strings, as clients send), or None: incomplete."""
    if not buf.startswith(b"*"):
        return None if b"\r\n" not in buf else (b"", buf.index(b"\r\n") + 2)
    eol = buf.find(b"\r\n")
    if eol < 0:
        return None
    n, pos, name = int(buf[1:eol]), eol + 2, b""
    for i in range(n):
        eol = buf.find(b"\r\n", pos)
        if eol < 0:
            return None
        ln = int(buf[pos + 1:eol])
        if len(buf) < eol + 2 + ln + 2:
            return None
        if i == 0:
            name = buf[eol + 2:eol + 2 + ln].upper()
        pos = eol + 2 + ln + 2
    return name, pos


def hold():
    open(os.path.join(dirname, "held"), "w").close()
    go = os.path.join(dirname, "go")
    # A condition polled, no deadline: the test's own bounds end it.
    while not os.path.exists(go):
        time.sleep(0.01)


def client_to_server(c, s):
    buf = b""
    try:
        while True:
            data = c.recv(65536)
            if not data:
                break
            buf += data
            while True:
                cmd = command(buf)
                if cmd is None:
                    break
                name, ln = cmd
                with held_once:
                    mine = not spent[0] and (seen[0] if after else name == target)
                    spent[0] = spent[0] or mine
                    seen[0] = seen[0] or name == target
                if mine:
                    hold()
                s.sendall(buf[:ln])
                buf = buf[ln:]
    except OSError:
        pass
    for x in (s, c):
        try:
            x.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def server_to_client(s, c):
    try:
        while True:
            data = s.recv(65536)
            if not data:
                break
            c.sendall(data)
    except OSError:
        pass
    for x in (s, c):
        try:
            x.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", 0))
ls.listen(16)
with open(os.path.join(dirname, "port.tmp"), "w") as f:
    f.write("%d\n" % ls.getsockname()[1])
os.rename(os.path.join(dirname, "port.tmp"), os.path.join(dirname, "port"))
while True:
    c, _ = ls.accept()
    s = socket.create_connection(("127.0.0.1", upstream))
    for fn, a, b in ((client_to_server, c, s), (server_to_client, s, c)):
        threading.Thread(target=fn, args=(a, b), daemon=True).start()
