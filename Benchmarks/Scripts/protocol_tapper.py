#!/usr/bin/python3
"""One protocol client, two ways to the broker: the web front's yardstick.

Usage: protocol_tapper.py zmq ROUTER TAPS PACE_MS
       protocol_tapper.py ws URL TAPS PACE_MS

Taps the `stats` key as `counter` does (its +), TAPS times, PACE_MS apart, each a WRITE that
waits for its ACK. `zmq` speaks PROTOCOL.md to the broker's ROUTER with a DEALER; `ws` sends the
same frames to the web front (URL is the page's, as `web` prints it), wrapped as a tab wraps
them. Everything else is the same code, so the two paths differ only by the front. Prints
`taps T1 T2 ...`, each tap's wall-clock time in microseconds, as the benchmark's tappers do.
"""
import json
import sys
import time
import uuid

TIMEOUT_S = 10
KEY = "stats"


class ZeroMQ:
    def __init__(self, endpoint):
        import zmq

        self.dealer = zmq.Context().socket(zmq.DEALER)
        self.dealer.setsockopt(zmq.LINGER, 0)
        self.dealer.connect(endpoint)

    def request(self, frames):
        self.dealer.send_multipart([frame.encode() for frame in frames])
        if not self.dealer.poll(TIMEOUT_S * 1000):
            sys.exit(f"no reply to {frames[0]}")
        return [frame.decode() for frame in self.dealer.recv_multipart()]


class WebSocket:
    def __init__(self, page):
        import websocket

        self.socket = websocket.create_connection(
            page.replace("http://", "ws://").rstrip("/") + "/ws", timeout=TIMEOUT_S)

    def request(self, frames):
        self.socket.send(json.dumps({"request": frames}))
        while True:
            message = json.loads(self.socket.recv())
            if isinstance(message.get("reply"), list):
                return message["reply"]


def main():
    if len(sys.argv) != 5 or sys.argv[1] not in ("zmq", "ws"):
        sys.exit(__doc__)
    way = ZeroMQ(sys.argv[2]) if sys.argv[1] == "zmq" else WebSocket(sys.argv[2])
    taps, pace = int(sys.argv[3]), int(sys.argv[4]) / 1000
    client = f"tapper-{uuid.uuid4()}"
    reply = way.request(["HELLO", "4", client])
    if reply[0] != "WELCOME":
        sys.exit(f"HELLO: {reply}")
    while True:
        reply = way.request(["GET", client, KEY])
        if reply[0] == "SNAPSHOT":
            break
        if reply[:2] != ["ERROR", "seeding"]:
            sys.exit(f"GET: {reply}")
        time.sleep(0.05)
    version = int(reply[2])
    stats = json.loads(reply[4]) if version else {}
    stamps, write = [], 0
    start = time.monotonic()
    for tap in range(taps):
        due = start + tap * pace
        time.sleep(max(0, due - time.monotonic()))
        stamps.append(time.time() * 1e6)
        while True:
            write += 1
            value = dict(stats)
            value["count"] = value.get("count", 0) + 1
            value["numberOfCounts"] = value.get("numberOfCounts", 0) + 1
            value["maxCount"] = max(value.get("maxCount", 0), value["count"])
            value.setdefault("minCount", 0)
            reply = way.request(
                ["WRITE", client, str(write), KEY, str(version), json.dumps(value)])
            if reply[0] == "ACK":
                version, stats = int(reply[3]), value
                break
            if reply[0] != "REJECT":
                sys.exit(f"WRITE: {reply}")
            version, stats = int(reply[3]), json.loads(reply[5])
    print("taps " + " ".join(f"{stamp:.1f}" for stamp in stamps), flush=True)


if __name__ == "__main__":
    main()
