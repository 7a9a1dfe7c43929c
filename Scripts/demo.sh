#!/usr/bin/env bash
# `make demo`: the broker, two counters and two profiles as separate OS processes on free local
# ports. The counters tap concurrently and a profile resets in the middle. Each line of output
# is prefixed with the process name. At the end the script reads the mirrored state in several
# processes and exits non-zero if they disagree.
set -euo pipefail

BIN=${BIN:-$(swift build -c release --show-bin-path)}
TMP=$(mktemp -d)
PIDS=()

cleanup() {
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'echo "demo: interrupted"; exit 130' INT TERM

# start NAME COMMAND...: runs COMMAND in the background, its output prefixed and kept in a log.
start() {
  local name=$1
  shift
  "$@" > >(tee "$TMP/$name.log" | sed -u "s/^/$(printf '%-10s│ ' "$name")/") 2>&1 &
  PIDS+=($!)
  LAST_PID=$!
}

# wait_for_text FILE TEXT: waits (up to 15 s) until FILE contains TEXT.
wait_for_text() {
  for _ in $(seq 300); do
    grep -qF -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.05
  done
  echo "demo: timed out waiting for \"$2\" in $1" >&2
  return 1
}

start broker "$BIN/broker" --listen 'tcp://127.0.0.1:*' --publish 'tcp://127.0.0.1:*' --data "$TMP/data"
wait_for_text "$TMP/broker.log" "Broker listening"
ROUTER=$(grep -o 'router=[^ ]*' "$TMP/broker.log" | head -1 | cut -d= -f2)
echo "demo      │ broker at $ROUTER"

start profile "$BIN/profile" --broker "$ROUTER" --print json
LIVE_PROFILE=$LAST_PID
wait_for_text "$TMP/profile.log" '"count":0'

start counter-1 "$BIN/counter" --broker "$ROUTER" --script "+x20,wait:300,+x20" --print json
COUNTER_1=$LAST_PID
start counter-2 "$BIN/counter" --broker "$ROUTER" --script "+x15,-x5,wait:300,+x10" --print json
COUNTER_2=$LAST_PID
start reset "$BIN/profile" --broker "$ROUTER" --script "wait:150,reset" --print json
RESET=$LAST_PID
for pid in "$COUNTER_1" "$COUNTER_2" "$RESET"; do
  wait "$pid" || { echo "demo: a scripted process failed" >&2; exit 1; }
done

# Read the mirrored state back in fresh processes of both kinds.
"$BIN/profile" --broker "$ROUTER" --once --print json > "$TMP/final-profile.log"
"$BIN/counter" --broker "$ROUTER" --script "wait:0" --print json > "$TMP/final-counter.log"
FINAL=$(tail -1 "$TMP/final-profile.log")
wait_for_text "$TMP/profile.log" "$FINAL"

echo
echo "final state, read in every process:"
status=0
for source in final-profile final-counter profile; do
  seen=$(grep -F '"count"' "$TMP/$source.log" | tail -1)
  printf '  %-14s %s\n' "$source" "$seen"
  [ "$seen" = "$FINAL" ] || status=1
done
if [ $status -eq 0 ]; then
  echo "all processes agree ✔"
else
  echo "processes DISAGREE ✘" >&2
fi
exit $status
