#!/usr/bin/python3
"""Checks the broker's per-key permissions from outside, as an operator meets them.

Usage: permissions_check.py BROKER

Starts the broker program BROKER with CURVE and an allow-list of four client keys (one with
every permission, one read-only, one limited by patterns, one more with every permission),
talks to it with pyzmq clients (written from PROTOCOL.md and SECURITY.md), reloads the list
with SIGHUP, and prints how many rules it checked; the first broken rule stops it with exit 1.
"""
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

import zmq

TIMEOUT_MS = 5000


class Broker:
    """The broker program, its log lines collected as they come."""

    def __init__(self, path, directory, keys):
        self.allow_list = os.path.join(directory, "allowed.txt")
        data = os.path.join(directory, "data")
        secret = os.path.join(directory, "server.key")
        with open(secret, "w") as file:
            file.write(keys.server_secret.decode() + "\n")
        self.lines = []
        self.condition = threading.Condition()
        self.process = subprocess.Popen(
            [path, "--listen", "tcp://127.0.0.1:*", "--publish", "tcp://127.0.0.1:*",
             "--seed-window", "0", "--curve-secret-file", secret, "--allow-keys", self.allow_list,
             "--data", data],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        threading.Thread(target=self.collect, daemon=True).start()
        listening = self.wait_for("Broker listening")
        self.router = listening.split("router=")[1].split()[0]

    def collect(self):
        for line in self.process.stdout:
            with self.condition:
                self.lines.append(line)
                self.condition.notify_all()

    def wait_for(self, text, after=0):
        """The first log line from index `after` on that contains `text`."""
        deadline = time.monotonic() + TIMEOUT_MS / 1000
        with self.condition:
            while True:
                for line in self.lines[after:]:
                    if text in line:
                        return line
                left = deadline - time.monotonic()
                if left <= 0 or self.process.poll() is not None:
                    sys.exit(f"the broker never logged {text!r}:\n{''.join(self.lines)}")
                self.condition.wait(left)

    def reload(self, text):
        """Writes the allow-list and sends SIGHUP; returns the log line that answers it."""
        with open(self.allow_list, "w") as file:
            file.write(text)
        with self.condition:
            seen = len(self.lines)
        self.process.send_signal(signal.SIGHUP)
        return self.wait_for("allow-list", after=seen)

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=10)


class Keys:
    def __init__(self):
        self.server_public, self.server_secret = zmq.curve_keypair()
        self.pairs = {name: zmq.curve_keypair() for name in ["owner", "reader", "limited", "thief"]}

    def public(self, name):
        return self.pairs[name][0].decode()


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if len(sys.argv) == 2 else 2)
    keys = Keys()
    context = zmq.Context()
    checked = 0

    def expect(condition, what, detail=""):
        nonlocal checked
        if not condition:
            sys.exit(f"rule broken: {what}: {detail}")
        checked += 1

    def allow_list(reader="read=count", limited="read=stats.* write=profile.*"):
        return "\n".join([
            "# every key",
            keys.public("owner"),
            f"{keys.public('reader')} {reader}",
            f"{keys.public('limited')} {limited}  # patterns",
            keys.public("thief"),
        ]) + "\n"

    def secure(socket, name):
        socket.setsockopt(zmq.LINGER, 0)
        socket.curve_serverkey = keys.server_public
        socket.curve_publickey, socket.curve_secretkey = keys.pairs[name]

    def connection(name):
        dealer = context.socket(zmq.DEALER)
        secure(dealer, name)
        dealer.connect(broker.router)
        return dealer

    def request(dealer, *frames, timeout=TIMEOUT_MS):
        """The reply, or None if none came (a DEALER with no connection cannot even send)."""
        try:
            dealer.send_multipart([f if isinstance(f, bytes) else str(f).encode() for f in frames],
                                  zmq.NOBLOCK)
        except zmq.Again:
            return None
        if not dealer.poll(timeout):
            return None
        return dealer.recv_multipart()

    def subscriber(name, prefix, dealer, client, key):
        """A SUB of `name` subscribed to `prefix`, once the broker confirmed it on `key`."""
        sub = context.socket(zmq.SUB)
        secure(sub, name)
        sub.setsockopt(zmq.SUBSCRIBE, prefix)
        sub.connect(publisher)
        for _ in range(250):
            dealer.send_multipart([b"SYNC", client.encode(), key.encode()])
            if sub.poll(20):
                frames = sub.recv_multipart()
                if frames[1:] == [b"SYNCED", client.encode()]:
                    return sub
        sys.exit(f"{name}'s subscription to {prefix!r} never became active")

    def received_until(sub, topic, kind=b"UPDATE"):
        """Every topic `sub` receives up to the first `kind` message on `topic`."""
        topics = []
        while sub.poll(TIMEOUT_MS):
            frames = sub.recv_multipart()
            topics.append(frames[0])
            if frames[0] == topic and frames[1] == kind:
                return topics
        sys.exit(f"no {kind} on {topic!r} arrived; received {topics}")

    versions = {}

    def write(dealer, client, key, value):
        """Writes `key` with compare-and-set until it is applied; returns the ACK."""
        write.ids = getattr(write, "ids", 0) + 1
        while True:
            reply = request(dealer, "WRITE", client, write.ids, key, versions.get(key, 0), value)
            if reply[0] == b"REJECT":
                versions[key] = int(reply[3])
                write.ids += 1
                continue
            if reply[0] == b"ACK":
                versions[key] = int(reply[3])
            return reply

    directory = tempfile.mkdtemp()
    with open(os.path.join(directory, "allowed.txt"), "w") as file:
        file.write(allow_list())
    broker = Broker(sys.argv[1], directory, keys)
    try:
        owner = connection("owner")
        welcome = request(owner, "HELLO", "4", "owner-id")
        expect(welcome[0] == b"WELCOME", "a key with every permission is welcome", welcome)
        publisher = welcome[3].decode()
        for key in ["count", "secret", "stats.a", "profile.name"]:
            reply = write(owner, "owner-id", key, '{"n":1}')
            expect(reply[0] == b"ACK", f"a key with every permission writes {key}", reply)

        # A read-only key reads, and is refused the rest, naming the key; it keeps working.
        reader = connection("reader")
        expect(request(reader, "HELLO", "4", "reader-id")[0] == b"WELCOME", "the reader is welcome")
        reply = request(reader, "GET", "reader-id", "count")
        expect(reply[0] == b"SNAPSHOT", "read=count reads count", reply)
        reply = request(reader, "WRITE", "reader-id", 1, "count", versions["count"], '{"n":9}')
        expect(reply[:2] == [b"ERROR", b"forbidden"] and reply[3:] == [b"count", b"1"]
               and b"count" in reply[2], "read=count may not write count", reply)
        for command in ["GET", "SYNC"]:
            reply = request(reader, command, "reader-id", "secret")
            expect(reply[:2] == [b"ERROR", b"forbidden"] and reply[3:] == [b"secret", b"0"],
                   f"read=count may not {command} secret", reply)
        reply = request(reader, "SEED", "reader-id", "count", "0-earlier", 9, '{"n":9}')
        expect(reply[:2] == [b"ERROR", b"forbidden"] and reply[3:] == [b"count", b"0"],
               "a copy offered with SEED needs write permission", reply)
        reply = request(reader, "GET", "reader-id", "count")
        expect(reply[0] == b"SNAPSHOT" and reply[4] == b'{"n":1}',
               "the refused requests changed nothing, and the connection works on", reply)

        # Patterns: stats.* to read, profile.* to write (and so read).
        limited = connection("limited")
        expect(request(limited, "HELLO", "4", "limited-id")[0] == b"WELCOME", "limited is welcome")
        expect(request(limited, "GET", "limited-id", "stats.a")[0] == b"SNAPSHOT",
               "read=stats.* reads stats.a")
        expect(request(limited, "GET", "limited-id", "profile.name")[0] == b"SNAPSHOT",
               "write=profile.* reads profile.name")
        reply = write(limited, "limited-id", "profile.name", '{"n":2}')
        expect(reply[0] == b"ACK", "write=profile.* writes profile.name", reply)
        for key in ["stats.a", "count"]:
            reply = write(limited, "limited-id", key, '{"n":3}')
            expect(reply[:2] == [b"ERROR", b"forbidden"], f"limited may not write {key}", reply)
        reply = request(limited, "GET", "limited-id", "statsx")
        expect(reply[:2] == [b"ERROR", b"forbidden"], "stats.* does not match statsx", reply)

        # A subscription with an empty prefix gets only what its key may read.
        reader_sub = subscriber("reader", b"", reader, "reader-id", "count")
        limited_sub = subscriber("limited", b"", limited, "limited-id", "stats.a")
        for n in range(20):
            write(owner, "owner-id", "secret", f'{{"n":{n}}}')
        write(owner, "owner-id", "stats.a", '{"n":20}')
        write(owner, "owner-id", "count", '{"n":21}')
        topics = received_until(reader_sub, b"count\0")
        expect(set(topics) == {b"count\0"},
               "an empty prefix receives none of 20 updates of a key it may not read", topics)
        topics = received_until(limited_sub, b"stats.a\0")
        expect(set(topics) == {b"stats.a\0"}, "patterns limit an empty prefix too", topics)

        # A client id belongs to the key that said HELLO with it first.
        thief = connection("thief")
        reply = request(thief, "HELLO", "4", "owner-id")
        expect(reply[:2] == [b"ERROR", b"forbidden"] and b"owner-id" in reply[2],
               "another key's HELLO with a taken id is forbidden", reply)
        reply = write(owner, "owner-id", "count", '{"n":22}')
        expect(reply[0] == b"ACK", "the owner's connection works on", reply)
        second = connection("owner")
        expect(request(second, "HELLO", "4", "owner-id")[0] == b"WELCOME",
               "the owner takes its id over from a new connection")
        reply = write(second, "owner-id", "count", '{"n":23}')
        expect(reply[0] == b"ACK", "and writes on it", reply)
        owner = second

        # SIGHUP grants: the reader may now write count.
        line = broker.reload(allow_list(reader="write=count"))
        expect("Reloaded" in line and keys.public("reader") in line, "the reload names the key", line)
        reply = write(reader, "reader-id", "count", '{"n":24}')
        expect(reply[0] == b"ACK", "a granted write goes through without reconnecting", reply)

        # SIGHUP narrows: the reader reads stats.* only, and loses its count subscription.
        line = broker.reload(allow_list(reader="read=stats.*"))
        expect("Reloaded" in line, "the narrowing reload is logged", line)
        reply = request(reader, "GET", "reader-id", "count")
        expect(reply[:2] == [b"ERROR", b"forbidden"], "a withdrawn read is refused", reply)
        reply = request(reader, "PING", "count", str(versions["count"]))
        expect(reply == [b"PONG", reply[1], b"count", b"18446744073709551615"],
               "a heartbeat names the withdrawn key with a version no client holds", reply)
        # Updates of count written before the reload may still be queued for the old connection.
        narrowed_at = versions["count"]
        seen = []
        deadline = time.monotonic() + TIMEOUT_MS / 1000
        while (b"stats.a\0", versions["stats.a"]) not in seen and time.monotonic() < deadline:
            write(owner, "owner-id", "count", '{"n":25}')
            write(owner, "owner-id", "stats.a", '{"n":26}')
            while reader_sub.poll(20):
                frames = reader_sub.recv_multipart()
                if frames[1] == b"UPDATE":
                    seen.append((frames[0], int(frames[2])))
        expect((b"stats.a\0", versions["stats.a"]) in seen
               and all(version <= narrowed_at for topic, version in seen if topic == b"count\0"),
               "after reconnecting, the subscription holds what the new list grants", seen)

        # SIGHUP removes a key: its connection is refused from its next request, and it cannot
        # connect again.
        text = allow_list(reader="read=stats.*").replace(keys.public("limited"), "# removed")
        line = broker.reload(text)
        expect(keys.public("limited") in line, "the removal names the key", line)
        reply = request(limited, "GET", "limited-id", "stats.a")
        expect(reply[:2] == [b"ERROR", b"forbidden"] and b"allow-list" in reply[2],
               "a removed key's connection is refused", reply)
        again = connection("limited")
        expect(request(again, "PING", timeout=1000) is None, "a removed key cannot connect again")

        # A list that does not parse is not taken.
        line = broker.reload(allow_list() + "not-a-key read=x\n")
        expect("cannot be used" in line and "line 6" in line, "a malformed list is refused", line)
        expect(request(reader, "GET", "reader-id", "stats.a")[0] == b"SNAPSHOT",
               "the list in force stays")
        expect(request(again, "PING", timeout=1000) is None, "and so does the removal")

        # A broker started again with its data keeps a writer's id its key's.
        broker.stop()
        with open(os.path.join(directory, "allowed.txt"), "w") as file:
            file.write(allow_list())
        broker = Broker(sys.argv[1], directory, keys)
        reply = request(connection("thief"), "HELLO", "4", "owner-id")
        expect(reply[:2] == [b"ERROR", b"forbidden"] and b"owner-id" in reply[2],
               "after a restart with --data, another key's HELLO with a writer's id is forbidden",
               reply)
        expect(request(connection("owner"), "HELLO", "4", "owner-id")[0] == b"WELCOME",
               "and the owner's is welcome")
    finally:
        broker.stop()
    print(f"permissions: {checked} checked")


if __name__ == "__main__":
    main()
