#!/usr/bin/env bash
# Retakes the pictures in Documentation/:
#   terminals.png  `counter` and `profile` side by side in tmux, sharing the count through a
#                  broker after a few taps (8 × +, 1 × -: the count at 7);
#   web.png        the page `web` serves, after a terminal counter tapped 3 times and the tab 4.
# Each runs against its own broker on free local ports. tmux runs on a private socket, so no
# other tmux server is touched; every process started here is stopped on exit, even on failure.
# BIN: where the programs are (default: `swift build --show-bin-path`; missing ones are built).
# Needs tmux, chromium, chromedriver and python3-selenium (`make deps` installs them).
set -euo pipefail

cd "$(dirname "$0")/.."
BIN=${BIN:-$(swift build --show-bin-path)}
OUT=Documentation
PYTHON=/usr/bin/python3
DEADLINE=30 # seconds to wait for anything to show

for tool in tmux chromium chromedriver "$PYTHON"; do
  command -v "$tool" >/dev/null || { echo "pictures: $tool is missing (make deps)" >&2; exit 1; }
done
"$PYTHON" -c "import selenium" 2>/dev/null \
  || { echo "pictures: python3-selenium is missing (make deps)" >&2; exit 1; }
for product in broker counter profile web; do
  if [ ! -x "$BIN/$product" ]; then
    echo "pictures: building $product"
    swift build --product "$product"
  fi
  [ -x "$BIN/$product" ] || { echo "pictures: no $BIN/$product" >&2; exit 1; }
done

TMP=$(mktemp -d)
SOCKET=sharedmirror-pictures-$$
PIDS=()
tmux() { command tmux -L "$SOCKET" -f /dev/null "$@"; }

cleanup() {
  local status=$? log
  if [ $status -ne 0 ]; then
    for log in "$TMP"/*.log; do
      [ -s "$log" ] && { echo "--- $(basename "$log"):"; tail -5 "$log"; } >&2
    done
  fi
  tmux kill-server 2>/dev/null || true
  rm -f "${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)/$SOCKET"
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'echo "pictures: interrupted" >&2; exit 130' INT TERM

# wait_for DESCRIPTION COMMAND...: runs COMMAND until it succeeds, for up to $DEADLINE seconds;
# fails at once if a process started here exited (as on ^C, which bash may not trap meanwhile).
wait_for() {
  local what=$1 deadline=$((SECONDS + DEADLINE)) pid
  shift
  until "$@"; do
    if [ $SECONDS -ge $deadline ]; then
      echo "pictures: timed out waiting for $what" >&2
      return 1
    fi
    for pid in "${PIDS[@]}"; do
      kill -0 "$pid" 2>/dev/null || { echo "pictures: a process exited" >&2; return 1; }
    done
    sleep 0.1
  done
}

# start NAME COMMAND...: runs COMMAND in the background, its output in $TMP/NAME.log.
start() {
  local name=$1
  shift
  "$@" >"$TMP/$name.log" 2>&1 &
  PIDS+=($!)
}

# logged NAME TEXT: whether $TMP/NAME.log contains TEXT.
logged() { grep -qsF -- "$2" "$TMP/$1.log"; }

# field NAME KEY: the value of the first KEY=VALUE in $TMP/NAME.log.
field() { grep -o "$2=[^ ]*" "$TMP/$1.log" | head -1 | cut -d= -f2-; }

# start_broker NAME [ARGUMENT...]: a broker on free ports; sets ROUTER to its endpoint.
start_broker() {
  local name=$1
  shift
  start "$name" "$BIN/broker" --listen 'tcp://127.0.0.1:0' --publish 'tcp://127.0.0.1:0' "$@"
  wait_for "$name to listen" logged "$name" "Broker listening"
  ROUTER=$(field "$name" router)
}

# shows PANE PATTERN: whether the pane's screen matches the extended regular expression.
shows() { grep -qE -- "$2" <<<"$(tmux capture-pane -p -t "pictures:0.$1")"; }

# --- terminals.png -------------------------------------------------------------------------
start_broker broker-terminals
# Two panes side by side, 80 columns each; no status line.
tmux new-session -d -s pictures -x 161 -y 14 "exec '$BIN/counter' --broker '$ROUTER'"
tmux set-option -t pictures status off
tmux split-window -h -t pictures:0 "exec '$BIN/profile' --broker '$ROUTER'"
wait_for "the counter to connect" shows 0 "connected"
wait_for "the profile to connect" shows 1 "connected"
for key in + + + + + + + + -; do tmux send-keys -t pictures:0.0 -l "$key"; done
wait_for "the counter to show 7" shows 0 "count +7$"
wait_for "the profile to show 7" shows 1 "current +7$"
wait_for "the profile to count 9 taps" shows 1 "taps +9$"
tmux capture-pane -e -p -t pictures:0.0 >"$TMP/counter.ansi"
tmux capture-pane -e -p -t pictures:0.1 >"$TMP/profile.ansi"
"$PYTHON" Scripts/pictures.py terminals "$OUT/terminals.png" \
  counter "$TMP/counter.ansi" profile "$TMP/profile.ansi"
tmux kill-server
echo "pictures: $OUT/terminals.png"

# --- web.png -------------------------------------------------------------------------------
start_broker broker-web --metrics 127.0.0.1:0
wait_for "the broker's metrics" logged broker-web "Metrics listening"
METRICS=$(field broker-web metrics | sed -e 's|^http://||' -e 's|/metrics$||')
start web "$BIN/web" --broker "$ROUTER" --listen 127.0.0.1:0 --broker-metrics "$METRICS"
wait_for "web to serve the page" logged web "Serving the page"
URL=$(field web url)
"$BIN/counter" --broker "$ROUTER" --script "+x3" >/dev/null
"$PYTHON" Scripts/pictures.py web "$URL" 4 7 "$OUT/web.png"
echo "pictures: $OUT/web.png"
