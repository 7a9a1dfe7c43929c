#!/usr/bin/python3
"""Compare-and-set increments of one JSON value from several Python processes: through the
SharedMirror broker (its wire protocol, as PROTOCOL.md gives it) and through Redis
(WATCH/GET/MULTI/SET/EXEC, as redis-py's documentation shows it), in the same run.

Usage: cas_vs_redis.py BIN_DIR [RUNS [PROCESSES [INCREMENTS]]]

BIN_DIR holds the `broker` program. Each run starts a broker and a redis-server of its own on
loopback, lets PROCESSES workers add 1 INCREMENTS times each to the field `count` of one JSON
value (read it, add one, write it back only if nobody wrote since, else try again), and checks
that the value ends at PROCESSES x INCREMENTS. Prints a Markdown table of the medians, and one
`cas-run` line per run.
"""
import json
import multiprocessing
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
import uuid

import redis
import zmq

TIMEOUT_MS = 10_000


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def request(dealer, *frames):
    dealer.send_multipart([f if isinstance(f, bytes) else str(f).encode() for f in frames])
    if not dealer.poll(TIMEOUT_MS):
        raise RuntimeError(f"no reply to {frames[0]}")
    return dealer.recv_multipart()


def increment(value):
    current = json.loads(value) if value else {}
    current["count"] = current.get("count", 0) + 1
    return json.dumps(current, sort_keys=True, separators=(",", ":")).encode()


def broker_worker(endpoint, increments, start, results):
    """One round trip per attempt: a WRITE against the version it knows, which a REJECT
    corrects (with the current value) for the next attempt."""
    client = f"cas-{uuid.uuid4()}"
    context = zmq.Context()
    dealer = context.socket(zmq.DEALER)
    dealer.setsockopt(zmq.LINGER, 0)
    dealer.connect(endpoint)
    assert request(dealer, "HELLO", "4", client)[0] == b"WELCOME"
    snapshot = request(dealer, "GET", client, "cas")
    assert snapshot[0] == b"SNAPSHOT", snapshot
    version, value = int(snapshot[2]), snapshot[4]
    write_id, conflicts = 0, 0
    start.wait()
    began = time.monotonic()
    for _ in range(increments):
        while True:
            write_id += 1
            proposed = increment(value)
            reply = request(dealer, "WRITE", client, write_id, "cas", version, proposed)
            if reply[0] == b"ACK":
                version, value = int(reply[3]), proposed
                break
            if reply[0] != b"REJECT":
                raise RuntimeError(f"write refused: {reply}")
            conflicts += 1
            version, value = int(reply[3]), reply[5]
    results.put((began, time.monotonic(), conflicts))
    context.destroy(linger=0)


def redis_worker(port, increments, start, results):
    """WATCH, GET, then MULTI/SET/EXEC in one pipeline; EXEC fails when the key changed."""
    connection = redis.Redis(port=port)
    conflicts = 0
    start.wait()
    began = time.monotonic()
    with connection.pipeline() as pipe:
        for _ in range(increments):
            while True:
                try:
                    pipe.watch("cas")
                    value = pipe.get("cas")
                    pipe.multi()
                    pipe.set("cas", increment(value))
                    pipe.execute()
                    break
                except redis.WatchError:
                    conflicts += 1
    results.put((began, time.monotonic(), conflicts))


def race(worker, target, processes, increments):
    """Starts the workers, lets them go together, and returns (increments per second, conflicts
    per increment)."""
    start = multiprocessing.Event()
    results = multiprocessing.Queue()
    workers = [
        multiprocessing.Process(target=worker, args=(target, increments, start, results))
        for _ in range(processes)
    ]
    for process in workers:
        process.start()
    # Every worker connects before the clock starts.
    time.sleep(0.5)
    start.set()
    outcomes = [results.get(timeout=600) for _ in workers]
    for process in workers:
        process.join()
        if process.exitcode != 0:
            raise RuntimeError(f"a worker failed with exit code {process.exitcode}")
    elapsed = max(end for _, end, _ in outcomes) - min(began for began, _, _ in outcomes)
    total = processes * increments
    return total / elapsed, sum(c for _, _, c in outcomes) / total


def broker_value(endpoint):
    context = zmq.Context()
    dealer = context.socket(zmq.DEALER)
    dealer.setsockopt(zmq.LINGER, 0)
    dealer.connect(endpoint)
    client = f"cas-check-{uuid.uuid4()}"
    request(dealer, "HELLO", "4", client)
    snapshot = request(dealer, "GET", client, "cas")
    context.destroy(linger=0)
    return json.loads(snapshot[4])["count"]


def one_run(bin_dir, processes, increments):
    broker = subprocess.Popen(
        [os.path.join(bin_dir, "broker"), "--listen", "tcp://127.0.0.1:*", "--publish",
         "tcp://127.0.0.1:*", "--seed-window", "0", "--log-level", "info"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    port = free_port()
    server = subprocess.Popen(
        [shutil.which("redis-server"), "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        endpoint = None
        for line in broker.stdout:
            match = re.search(r"router=(\S+)", line)
            if match:
                endpoint = match.group(1)
                break
        if endpoint is None:
            raise RuntimeError("the broker did not start")
        connection = redis.Redis(port=port)
        for _ in range(100):
            try:
                connection.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        total = processes * increments
        ours = race(broker_worker, endpoint, processes, increments)
        theirs = race(redis_worker, port, processes, increments)
        final = (broker_value(endpoint), json.loads(connection.get("cas"))["count"])
        if final != (total, total):
            raise RuntimeError(f"final counts {final}, expected {total} each")
        return ours, theirs
    finally:
        broker.terminate()
        server.terminate()
        broker.wait()
        server.wait()


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    # Started by the Swift harness, this process inherits a thread's blocked signals, and so
    # would the broker and redis-server, which then ignore the SIGTERM that ends them.
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    bin_dir = sys.argv[1]
    runs, processes, increments = (
        int(sys.argv[i]) if len(sys.argv) > i else default
        for i, default in ((2, 5), (3, 3), (4, 3000)))
    rows = []
    for run in range(runs):
        (ours, ours_conflicts), (theirs, theirs_conflicts) = one_run(bin_dir, processes, increments)
        rows.append((ours, theirs, ours_conflicts, theirs_conflicts))
        print(f"cas-run {run + 1}: broker {ours:.0f}/s ({ours_conflicts:.2f} conflicts per increment),"
              f" redis {theirs:.0f}/s ({theirs_conflicts:.2f}), ratio {ours / theirs:.2f}", flush=True)
    median = lambda index: statistics.median(row[index] for row in rows)
    ratios = [row[0] / row[1] for row in rows]
    print()
    print(f"{processes} Python processes x {increments} compare-and-set increments of one JSON value"
          f" (every run ends at exactly {processes * increments} on both), median of {runs} runs:")
    print()
    print("| path | increments per second | conflicts per increment |")
    print("|---|---:|---:|")
    print(f"| SharedMirror broker (WRITE against a version; REJECT carries the value) | {median(0):.0f} | {median(2):.2f} |")
    print(f"| Redis 7 (WATCH, GET, MULTI/SET/EXEC) | {median(1):.0f} | {median(3):.2f} |")
    print()
    ratio = statistics.median(ratios)
    print(f"Ratio to Redis: **{ratio:.2f}×** (goal ≥ 1×: {'met' if ratio >= 1 else '**not met**'}),"
          f" the median of the runs' ratios, per run {min(ratios):.2f}–{max(ratios):.2f}×.")


if __name__ == "__main__":
    main()
