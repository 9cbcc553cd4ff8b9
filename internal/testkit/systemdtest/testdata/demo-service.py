#!/usr/bin/python3
# A socket-activated service for systemdtest_test.go: it logs what systemd
# passed (LISTEN_FDS, LISTEN_PID) to stdout, which is the journal, then
# answers every connection on the inherited listening socket (fd 3,
# SD_LISTEN_FDS_START) with "hello".
import os
import socket
import sys

fds = os.environ.get("LISTEN_FDS")
pid = os.environ.get("LISTEN_PID")
names = os.environ.get("LISTEN_FDNAMES")
print(f"LISTEN_FDS={fds} LISTEN_PID={pid} LISTEN_FDNAMES={names} pid={os.getpid()}", flush=True)
if fds != "1" or pid != str(os.getpid()):
    sys.exit("not socket-activated with exactly one socket")

listener = socket.socket(fileno=3)
while True:
    conn, _ = listener.accept()
    conn.sendall(b"hello\n")
    conn.close()
