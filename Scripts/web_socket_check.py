#!/usr/bin/python3
"""Bad input at the web front's WebSocket (PROTOCOL.md, "Browsers").

Usage: web_socket_check.py WS_URL FUZZ_INPUTS
Each refused message gets one ERROR reply and the WebSocket stays usable; an oversized one
closes it with 1009; a page of another origin is refused the upgrade (400). Prints one "ok ..." line
per check and "fuzz: N inputs, N errors" at the end; exits 1 at the first surprise.
"""
import json
import random
import struct
import sys

import websocket


def fail(message):
    print("FAIL " + message, flush=True)
    sys.exit(1)


def reply(ws):
    message = json.loads(ws.recv())
    if "reply" not in message:
        fail(f"expected a reply, got {message}")
    return message["reply"]


def expect_error(ws, sent, code):
    if isinstance(sent, bytes):
        ws.send_binary(sent)
    else:
        ws.send(sent)
    answer = reply(ws)
    if answer[:2] != ["ERROR", code]:
        fail(f"{sent[:60]!r}: expected ERROR {code}, got {answer}")


def main():
    url, inputs = sys.argv[1], int(sys.argv[2])
    ws = websocket.create_connection(url, timeout=10)
    expect_error(ws, "garbage", "bad-request")
    expect_error(ws, json.dumps({"request": ["WELCOME", "4", "x", "tcp://x:1"]}), "unknown-command")
    expect_error(ws, json.dumps({"request": ["WRITE", "c", "x"]}), "bad-request")
    expect_error(ws, json.dumps({"request": ["GET", 1, 2]}), "bad-request")
    expect_error(ws, json.dumps({"request": ["HELLO", "4", "c"], "more": 1}), "bad-request")
    expect_error(ws, b"\x00\x01binary", "bad-request")
    ws.send(json.dumps({"request": ["HELLO", "4", "web-check"]}))
    if reply(ws)[0] != "WELCOME":
        fail("HELLO after refused messages got no WELCOME")
    print("ok refused messages answered, connection usable", flush=True)

    rng = random.Random(7)
    alphabet = ['"', "[", "]", "{", "}", ",", ":", "request", "HELLO", "WRITE", "3", "\\u0000", "ü", " ", "1"]
    errors = 0
    for _ in range(inputs):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 24)))
        ws.send(text)
        answer = reply(ws)
        if answer[0] == "ERROR":
            errors += 1
    ws.send(json.dumps({"request": ["PING"]}))
    if reply(ws)[0] != "PONG":
        fail("PING after the fuzzing got no PONG")
    print(f"fuzz: {inputs} inputs, {errors} errors", flush=True)

    # The front may close before the client finishes sending (a reset), or the client may
    # read its close frame: either way the message is refused by its size, and a new
    # connection is served.
    try:
        ws.send("x" * (2 << 20))
        frame = ws.frame_buffer.recv_frame()
        status = struct.unpack("!H", frame.data[:2])[0] if len(frame.data) >= 2 else None
        if frame.opcode != websocket.ABNF.OPCODE_CLOSE or status != 1009:
            fail(f"an oversized message got opcode {frame.opcode}, status {status}, not a close with 1009")
    except (OSError, websocket.WebSocketConnectionClosedException):
        pass
    again = websocket.create_connection(url, timeout=10)
    again.send(json.dumps({"request": ["PING"]}))
    if reply(again)[0] != "PONG":
        fail("a new connection after the oversized message got no PONG")
    again.close()
    print("ok oversized message closed the connection", flush=True)

    try:
        websocket.create_connection(url, timeout=10, origin="http://elsewhere.example")
        fail("a page of another origin was upgraded")
    except websocket.WebSocketBadStatusException as error:
        if error.status_code != 400:
            fail(f"another origin got {error.status_code}, not 400")
    print("ok another origin refused", flush=True)


if __name__ == "__main__":
    main()
