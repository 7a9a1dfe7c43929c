#!/usr/bin/python3
"""Sends random and truncated multipart messages at a live broker's ROUTER socket.

Usage: fuzz_broker.py ENDPOINT INPUTS SEED

Mixes pure noise, real commands with broken fields, truncated real messages, wrong frame
counts and oversized frames, over several connections, without waiting for replies (they are
drained as they come). Prints one line: inputs sent and replies received.
"""
import random
import sys

import zmq

COMMANDS = [b"HELLO", b"PING", b"SYNC", b"GET", b"WRITE", b"WRITEQ", b"SNAPSHOT", b"ACK", b"UPDATE", b""]


def noise(rng, size):
    return rng.randbytes(size)


def message(rng):
    kind = rng.randrange(6)
    if kind == 4 and rng.randrange(100) > 0:  # big values are rare: each one costs a reconnect
        kind = 5
    if kind == 0:  # pure noise
        return [noise(rng, rng.randrange(0, 64)) for _ in range(rng.randrange(1, 8))]
    if kind == 1:  # a real command with random fields
        return [rng.choice(COMMANDS)] + [noise(rng, rng.randrange(0, 24)) for _ in range(rng.randrange(0, 7))]
    if kind == 2:  # a valid write, truncated
        full = [b"WRITE", b"fuzz", str(rng.randrange(1 << 64)).encode(), b"fuzz-key",
                str(rng.randrange(10)).encode(), b'{"count":1}']
        return full[: rng.randrange(1, len(full))]
    if kind == 3:  # numbers out of range, keys with control characters
        return [b"WRITE", b"fuzz", b"99999999999999999999999", b"k\x00\x01", b"-1", b"{}"]
    if kind == 4:  # a big value
        return [b"WRITE", b"fuzz", b"1", b"fuzz-big", b"0", b"x" * rng.randrange(1 << 16, 3 << 19)]
    return [b"GET", noise(rng, 8), b"\xff\xfe" + noise(rng, 4)]


def main():
    endpoint, inputs, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rng = random.Random(seed)
    context = zmq.Context()
    sockets = []
    for _ in range(8):
        dealer = context.socket(zmq.DEALER)
        dealer.setsockopt(zmq.LINGER, 10000)  # deliver what is queued before exiting
        dealer.setsockopt(zmq.SNDHWM, 10000)
        dealer.setsockopt(zmq.SNDTIMEO, 2000)
        dealer.connect(endpoint)
        sockets.append(dealer)
    replies = 0
    delivered = 0
    for index in range(inputs):
        socket = sockets[index % len(sockets)]
        try:
            socket.send_multipart(message(rng))
            delivered += 1
        except zmq.Again:
            pass  # the broker dropped this connection (an oversized message); it reconnects
        if index % 64 == 0:
            for drained in sockets:
                while drained.poll(0):
                    drained.recv_multipart()
                    replies += 1
    print(f"fuzz: {inputs} inputs generated, {delivered} queued to the broker, {replies} replies read")


if __name__ == "__main__":
    main()
