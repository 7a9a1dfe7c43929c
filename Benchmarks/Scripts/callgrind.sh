#!/usr/bin/env bash
# Counts the instructions per write of the broker path with callgrind, which unlike the timings
# repeats to within a percent from run to run on any machine. Three scenarios of COUNT writes
# paced 5 ms apart, one writer and one reader (plus the broker), each after WARMUP writes that
# are not counted (the profiled peer's counters are zeroed between them):
#   reader: the reader runs under callgrind (its I/O thread: receive, decode, notify)
#   writer: the writer runs under callgrind (its thread: withLock, encode, send; its I/O
#           thread: its own update coming back, which confirms the write)
#   broker: the broker runs under callgrind (its thread, and libzmq's I/O thread fanning out)
# Usage: Benchmarks/Scripts/callgrind.sh BIN_DIR [COUNT [WARMUP]]
#   BIN_DIR: the Benchmarks package's release directory
# Prints "ROLE THREAD: N instructions per write" and keeps the profiles in .build/callgrind/,
# with one line per thread in summary.tsv (role, thread, per write, writes, profile, and the
# reader's notifications).
set -euo pipefail
bin="${1:?usage: callgrind.sh BIN_DIR [COUNT [WARMUP]]}"
count="${2:-1000}"
warmup="${3:-100}"
out="$(cd "$(dirname "$0")/.." && pwd)/.build/callgrind"
mkdir -p "$out"
rm -f "$out/summary.tsv"
# valgrind cannot read the toolchain's DWARF; symbol names survive the strip.
strip --strip-debug -o "$out/peer" "$bin/callgrind-peer"
peer="$out/peer"
port=$((20000 + RANDOM % 20000))

go="$out/go"
under_callgrind() { # ROLE ARGS...: starts the peer under callgrind, profile in $out/ROLE.*
  local role="$1"
  shift
  rm -f "$out/$role".out*
  SWIFT_BACKTRACE=enable=no valgrind --tool=callgrind --separate-threads=yes \
    --callgrind-out-file="$out/$role.out" "$peer" "$@" > "$out/$role.log" 2>&1 < /dev/null &
  profiled=$!
}

wait_for() { # WORD LOG: until the peer writing LOG says WORD (valgrind starts slowly)
  for _ in $(seq 1 600); do grep -q "^$1" "$2" 2> /dev/null && return 0; sleep 0.1; done
  echo "no peer said $1 ($2)" >&2
  exit 1
}

measure() { # WRITER_LOG READER_LOG: once the warm-up writes are in, counts from zero
  wait_for warm "$1"
  wait_for warm "$2"
  if ! callgrind_control --zero "$profiled" 2>&1 | grep -q OK; then
    echo "could not zero the counters of valgrind's process $profiled" >&2
    exit 1
  fi
  touch "$go"
}

report() { # ROLE: instructions per write of each thread that did any real work
  local role="$1"
  # The broker counts the writes it applied: a writer may have folded taps together.
  local writes
  writes=$(sed -n 's/^writes applied: //p' "$out/$role.log")
  writes="${writes:-$count}"
  for profile in "$out/$role".out-*; do
    local total functions name
    total=$(grep -m1 -E '^(summary|totals):' "$profile" | grep -oE '[0-9]+$')
    functions=$(callgrind_annotate --inclusive=yes "$profile" 2> /dev/null | swift demangle --simplified)
    # Threads are told apart by what they ran. Of a main thread only the writer's calls of
    # `withLock` (a write's way out) count: the rest of it, and the other peers' main threads,
    # only wait.
    if [[ "$profile" == *-01 ]]; then
      [[ "$role" == writer ]] || continue
      name="withLock on the main thread"
      total=$(grep -m1 -E '^ *[0-9,]+ .*MutableReference.withLock' <<< "$functions" \
        | awk '{gsub(",", "", $1); print $1}')
    elif grep -q 'ClientLoop.run()' <<< "$functions"; then name="client I/O thread"
    elif grep -q 'BrokerServer.serve' <<< "$functions"; then name="broker thread"
    elif ((total > 1000 * count)); then name="libzmq I/O thread"
    else continue
    fi
    # A reader under callgrind falls behind and takes several updates per turn, decoding and
    # notifying once for them: its figure moves with how many turns it took, which it names.
    local seen=""
    if [[ "$role" == reader && "$name" == "client I/O thread" ]]; then
      seen=$(sed -n 's/^updates seen: //p' "$out/$role.log")
    fi
    echo "$role, $name: $((total / writes)) instructions per write${seen:+ ($seen notifications)}"
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$role" "$name" "$((total / writes))" "$writes" "$profile" \
      "$seen" >> "$out/summary.tsv"
  done
}

# Each broker binds its PUB socket on the port after its ROUTER's.
endpoint() { echo "tcp://127.0.0.1:$((port + 2 * $1))"; }

# The peers that are not profiled. A broker serves until it applied COUNT writes, which a writer
# that batches two taps into one write never makes it: they are stopped after each scenario.
helpers=()
stop_helpers() {
  ((${#helpers[@]} == 0)) || kill "${helpers[@]}" 2> /dev/null || true
  helpers=()
  return 0
}
trap stop_helpers EXIT
helper() { # LOG ARGS...: starts a peer that is not profiled, its output in LOG
  local log="$1"
  shift
  "$peer" "$@" > "$log" 2>&1 < /dev/null &
  helpers+=($!)
}

# The reader under callgrind.
rm -f "$go" "$go".*
helper "$out/broker-0.log" broker "$(endpoint 0)" "$warmup" "$count" "$go"
wait_for ready "$out/broker-0.log"
under_callgrind reader read "$(endpoint 0)" "$warmup" "$count" "$go"
wait_for ready "$out/reader.log"
helper "$out/writer-0.log" write "$(endpoint 0)" "$warmup" "$count" "$go"
measure "$out/writer-0.log" "$out/reader.log"
wait "$profiled"
stop_helpers
report reader

# The writer under callgrind.
rm -f "$go" "$go".*
helper "$out/broker-1.log" broker "$(endpoint 1)" "$warmup" "$count" "$go"
wait_for ready "$out/broker-1.log"
helper "$out/reader-1.log" read "$(endpoint 1)" "$warmup" "$count" "$go"
wait_for ready "$out/reader-1.log"
under_callgrind writer write "$(endpoint 1)" "$warmup" "$count" "$go"
measure "$out/writer.log" "$out/reader-1.log"
wait "$profiled"
stop_helpers
report writer

# The broker under callgrind.
rm -f "$go" "$go".*
under_callgrind broker broker "$(endpoint 2)" "$warmup" "$count" "$go"
wait_for ready "$out/broker.log"
helper "$out/reader-2.log" read "$(endpoint 2)" "$warmup" "$count" "$go"
wait_for ready "$out/reader-2.log"
helper "$out/writer-2.log" write "$(endpoint 2)" "$warmup" "$count" "$go"
measure "$out/writer-2.log" "$out/reader-2.log"
wait "$profiled"
stop_helpers
report broker
