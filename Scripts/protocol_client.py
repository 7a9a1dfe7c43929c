#!/usr/bin/python3
"""An independent client of the SharedMirror broker, written only from PROTOCOL.md.

Usage: protocol_client.py ENDPOINT KEY FIELD DELTA
       protocol_client.py ENDPOINT --check-rules

Reads KEY (a JSON object), adds DELTA to FIELD with compare-and-set (retrying on REJECT),
waits for its own UPDATE on the PUB socket, and prints the final value as one JSON line.
With --check-rules, checks the rules of protocol 3 against the broker (started with
--seed-window 0, or more than its seed window after it started) and prints how many it
checked; the first broken rule stops it with exit 1.
"""
import json
import sys
import time
import uuid

import zmq

TIMEOUT_MS = 5000


def request(dealer, *frames):
    dealer.send_multipart([f if isinstance(f, bytes) else str(f).encode() for f in frames])
    if not dealer.poll(TIMEOUT_MS):
        sys.exit(f"no reply to {frames[0]}")
    return dealer.recv_multipart()


def publisher_of(welcome, endpoint):
    publisher = welcome[3].decode()
    if publisher.startswith("tcp://") and endpoint.startswith("tcp://"):
        publisher = endpoint.rsplit(":", 1)[0] + ":" + publisher.rsplit(":", 1)[1]
    return publisher


def check_rules(endpoint):
    context = zmq.Context()
    checked = 0

    def connection():
        dealer = context.socket(zmq.DEALER)
        dealer.setsockopt(zmq.LINGER, 0)
        dealer.connect(endpoint)
        return dealer

    def expect(condition, what, reply):
        nonlocal checked
        if not condition:
            sys.exit(f"rule broken: {what}: {reply}")
        checked += 1

    stranger = connection()
    reply = request(stranger, "GET", "stranger", "k")
    expect(reply[:2] == [b"ERROR", b"hello"], "GET without HELLO is refused with hello", reply)
    reply = request(stranger, "WRITE", "stranger", 1, "k", 0, "1")
    expect(reply[:2] == [b"ERROR", b"hello"] and reply[3:] == [b"k", b"1"],
           "WRITE without HELLO is refused with hello, naming key and write", reply)
    reply = request(stranger, "PING")
    expect(reply[0] == b"PONG" and len(reply) == 2, "PING needs no HELLO", reply)
    for version, code in (("3", b"version"), ("6", b"version"), ("03", b"bad-request"), ("three", b"bad-request")):
        reply = request(stranger, "HELLO", version, "c")
        expect(reply[:2] == [b"ERROR", code], f"HELLO {version!r} is refused with {code}", reply)

    client = f"python-{uuid.uuid4()}"
    # Keys of their own, so the checks run again on the same broker.
    k, seeded = f"k-{uuid.uuid4()}", f"seeded-{uuid.uuid4()}"
    dealer = connection()
    older = request(connection(), "HELLO", "4", client)
    expect(older[0] == b"WELCOME" and older[1] == b"4", "HELLO 4 is welcome, in version 4", older)
    welcome = request(dealer, "HELLO", "5", client)
    expect(welcome[0] == b"WELCOME" and welcome[1] == b"5", "HELLO 5 is welcome", welcome)
    instance = welcome[2]
    reply = request(dealer, "GET", "someone-else", k)
    expect(reply[:2] == [b"ERROR", b"bad-request"], "requests name the client of the HELLO", reply)
    for write, base, value, what in (("0", "0", "1", "write id 0"), ("1", "0", "", "an empty value"),
                                     ("1", "00", "1", "a leading zero")):
        reply = request(dealer, "WRITE", client, write, k, base, value)
        expect(reply[:2] == [b"ERROR", b"bad-request"] and reply[3:] == [k.encode(), write.encode()],
               f"{what} is refused, naming key and write", reply)
    reply = request(dealer, "WRITE", client, 18446744073709551615, k, 0, "1")
    if reply[:2] == [b"ERROR", b"seeding"]:
        sys.exit("the broker is still collecting copies after its start (its seed window): "
                 "start it with --seed-window 0, or run the checks after the window")
    expect(reply == [b"ACK", k.encode(), b"18446744073709551615", b"1"], "the largest write id works", reply)
    reply = request(dealer, "WRITE", client, 18446744073709551615, k, 1, "2")
    expect(reply[0] == b"REJECT" and reply[4] == b"18446744073709551615" and len(reply) == 6,
           "and then nothing more from that client id on that key", reply)
    reply = request(dealer, "WRITE", client, 18446744073709551615, k, 0, "2")
    expect(reply[0] == b"REJECT" and reply[6:] == [client.encode(), b"18446744073709551615"],
           "a REJECT names the writers of the versions after its base", reply)

    reply = request(dealer, "PING", k, 0, "nothing", 0)
    expect(reply == [b"PONG", instance, k.encode(), b"1"], "PONG names the keys held at another version", reply)

    # A copy of a key this broker never had, from an earlier instance, is adopted and published.
    sub = context.socket(zmq.SUB)
    sub.setsockopt(zmq.LINGER, 0)
    sub.setsockopt(zmq.SUBSCRIBE, seeded.encode() + b"\0")
    sub.connect(publisher_of(welcome, endpoint))
    wait_for_subscription(dealer, sub, client, seeded)
    reply = request(dealer, "SEED", client, seeded, "0-earlier", 7, '{"count":7}', "gone", 3)
    expect(reply == [b"SNAPSHOT", seeded.encode(), b"1", b"0", b'{"count":7}', b"gone", b"3"],
           "an unknown key takes a copy, with the writes it holds", reply)
    published = None
    while published is None and sub.poll(TIMEOUT_MS):
        frames = sub.recv_multipart()
        if frames[1] == b"UPDATE":  # not a late answer to a repeated SYNC
            published = frames
    expect(published is not None and published[1:5] == [b"UPDATE", b"1", client.encode(), b"0"],
           "the adopted copy is published with write 0", published)
    reply = request(dealer, "SEED", client, seeded, instance, 9, '{"count":9}')
    expect(reply[2] == b"1", "a copy from this very instance is not adopted", reply)
    reply = request(dealer, "SEED", client, k, "0-earlier", 9, '{"count":9}')
    expect(reply[2] == b"1", "a key written on this instance takes no copy", reply)
    print(f"rules: {checked} checked")


def wait_for_subscription(dealer, sub, client, key):
    for _ in range(250):
        dealer.send_multipart([b"SYNC", client.encode(), key.encode()])
        if sub.poll(20):
            frames = sub.recv_multipart()
            if frames[1] == b"SYNCED" and frames[2] == client.encode():
                return
    sys.exit("the subscription never became active")


def main():
    if sys.argv[1:2] in (["-h"], ["--help"]):
        print(__doc__)
        return
    if len(sys.argv) not in (3, 5) or (len(sys.argv) == 3 and sys.argv[2] != "--check-rules"):
        sys.exit(__doc__)
    if sys.argv[2:] == ["--check-rules"]:
        check_rules(sys.argv[1])
        return
    endpoint, key, field, delta = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    client = f"python-{uuid.uuid4()}"
    context = zmq.Context()
    dealer = context.socket(zmq.DEALER)
    dealer.setsockopt(zmq.LINGER, 0)
    dealer.connect(endpoint)

    welcome = request(dealer, "HELLO", "5", client)
    assert welcome[0] == b"WELCOME", welcome
    publisher = publisher_of(welcome, endpoint)

    # Subscribe, prove the subscription works (SYNC -> SYNCED), then take a snapshot.
    sub = context.socket(zmq.SUB)
    sub.setsockopt(zmq.LINGER, 0)
    sub.setsockopt(zmq.SUBSCRIBE, key.encode() + b"\0")
    sub.connect(publisher)
    wait_for_subscription(dealer, sub, client, key)

    snapshot = request(dealer, "GET", client, key)
    while snapshot[:2] == [b"ERROR", b"seeding"]:
        # A broker collecting copies after a restart does not know yet whether the key has a value.
        time.sleep(0.5)
        snapshot = request(dealer, "GET", client, key)
    assert snapshot[0] == b"SNAPSHOT", snapshot
    version, value = int(snapshot[2]), snapshot[4]
    write_id = 0
    while True:
        current = json.loads(value) if value else {}
        current[field] = current.get(field, 0) + delta
        write_id += 1
        payload = json.dumps(current, sort_keys=True, separators=(",", ":")).encode()
        reply = request(dealer, "WRITE", client, write_id, key, version, payload)
        if reply[0] == b"ACK":
            version = int(reply[3])
            break
        if reply[0] == b"REJECT":
            version, value = int(reply[3]), reply[5]
            continue
        if reply[:2] == [b"ERROR", b"seeding"]:
            # A broker collecting copies after a restart: the write waits.
            time.sleep(0.5)
            continue
        sys.exit(f"write refused: {reply}")

    # Our own write comes back on the PUB socket.
    while sub.poll(TIMEOUT_MS):
        frames = sub.recv_multipart()
        if frames[1] == b"UPDATE" and int(frames[2]) >= version:
            print(frames[5].decode())
            return
    sys.exit("no UPDATE for our write")


if __name__ == "__main__":
    main()
