#!/usr/bin/python3
"""An independent client of the SharedMirror broker, written only from PROTOCOL.md.

Usage: protocol_client.py ENDPOINT KEY FIELD DELTA

Reads KEY (a JSON object), adds DELTA to FIELD with compare-and-set (retrying on REJECT),
waits for its own UPDATE on the PUB socket, and prints the final value as one JSON line.
"""
import json
import sys
import uuid

import zmq

TIMEOUT_MS = 5000


def request(dealer, *frames):
    dealer.send_multipart([f if isinstance(f, bytes) else str(f).encode() for f in frames])
    if not dealer.poll(TIMEOUT_MS):
        sys.exit(f"no reply to {frames[0]}")
    return dealer.recv_multipart()


def main():
    endpoint, key, field, delta = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    client = f"python-{uuid.uuid4()}"
    context = zmq.Context()
    dealer = context.socket(zmq.DEALER)
    dealer.setsockopt(zmq.LINGER, 0)
    dealer.connect(endpoint)

    welcome = request(dealer, "HELLO", "2", client)
    assert welcome[0] == b"WELCOME", welcome
    publisher = welcome[3].decode()
    if publisher.startswith("tcp://") and endpoint.startswith("tcp://"):
        publisher = endpoint.rsplit(":", 1)[0] + ":" + publisher.rsplit(":", 1)[1]

    # Subscribe, prove the subscription works (SYNC -> SYNCED), then take a snapshot.
    sub = context.socket(zmq.SUB)
    sub.setsockopt(zmq.LINGER, 0)
    sub.setsockopt(zmq.SUBSCRIBE, key.encode())
    sub.connect(publisher)
    for _ in range(250):
        dealer.send_multipart([b"SYNC", client.encode(), key.encode()])
        if sub.poll(20):
            frames = sub.recv_multipart()
            if frames[1] == b"SYNCED" and frames[2] == client.encode():
                break
    else:
        sys.exit("the subscription never became active")

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
