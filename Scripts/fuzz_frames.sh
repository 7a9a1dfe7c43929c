#!/usr/bin/env bash
# Fuzzes the broker's frame decoder with libFuzzer (shipped with the Swift toolchain) under
# AddressSanitizer. Usage: Scripts/fuzz_frames.sh [RUNS]   (default 1,000,000)
# Prints libFuzzer's figures and a last line "frame fuzzer: N inputs, 0 crashes".
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-1000000}"
out=.build/fuzz
mkdir -p "$out/corpus"
swiftc -O -swift-version 6 -parse-as-library -sanitize=fuzzer,address -module-name FrameFuzz \
  Sources/SharedBroker/BrokerMessage.swift Sources/SharedBroker/Internal/Frames.swift \
  Fuzz/FrameDecoderFuzzer.swift -o "$out/frame-fuzzer" 2>&1 \
  | { grep -v "Cannot export local symbol" || true; } >&2
# Valid messages to start from, in the harness's [length][bytes] framing.
seed() { python3 -c 'import sys; sys.stdout.buffer.write(b"".join(bytes([len(f)]) + f.encode() for f in sys.argv[1:]))' "$@"; }
seed HELLO 1 client-a > "$out/corpus/hello"
seed WRITE client-a 7 stats 6 '{"count":1}' > "$out/corpus/write"
seed stats UPDATE 7 client-a 3 '{"count":1}' > "$out/corpus/update"
seed ERROR too-large "value too large" stats 9 > "$out/corpus/error"
# libFuzzer reports crashes itself; Swift's backtracer would stall on the sanitized binary.
SWIFT_BACKTRACE=enable=no "$out/frame-fuzzer" -runs="$runs" -max_len=512 -seed=1 \
  -print_final_stats=1 -artifact_prefix="$out/" "$out/corpus" 2>&1 \
  | tee "$out/last-run.log" | grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss_mb)" || true
executed=$(grep -oE "stat::number_of_executed_units: [0-9]+" "$out/last-run.log" | grep -oE "[0-9]+$" || echo 0)
if grep -qE "ERROR: (libFuzzer|AddressSanitizer)|Fatal error" "$out/last-run.log"; then
  echo "frame fuzzer: $executed inputs, 1 crash (see $out/last-run.log)"
  exit 1
fi
echo "frame fuzzer: $executed inputs, 0 crashes"
