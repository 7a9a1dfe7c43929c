#!/usr/bin/env bash
# Fuzzes a decoder with libFuzzer (shipped with the Swift toolchain) under AddressSanitizer.
# Usage: Scripts/fuzz.sh frames|json [RUNS]   (default 1,000,000)
#   frames: the broker's wire protocol frame decoder (Fuzz/FrameDecoderFuzzer.swift)
#   json:   the broker's JSON value decoder and encoder against Foundation's
#           (Fuzz/JSONDecoderFuzzer.swift)
# Prints libFuzzer's figures and a last line "TARGET fuzzer: N inputs, 0 crashes".
set -euo pipefail
cd "$(dirname "$0")/.."
target="${1:?usage: Scripts/fuzz.sh frames|json [RUNS]}"
runs="${2:-1000000}"
out=.build/fuzz-$target
mkdir -p "$out/corpus"
case "$target" in
  frames)
    # The whole module, so a file added to it or moved cannot leave the fuzzer unbuildable.
    sources=(Sources/SharedBrokerProtocol/*.swift Fuzz/FrameDecoderFuzzer.swift)
    # Valid messages to start from, in the harness's [length][bytes] framing (`\0` is a NUL).
    seed() { python3 -c 'import sys; sys.stdout.buffer.write(b"".join(bytes([len(f)]) + f for f in (a.encode().replace(b"\\0", b"\0") for a in sys.argv[1:])))' "$@"; }
    seed HELLO 1 client-a > "$out/corpus/hello"
    seed WRITE client-a 7 stats 6 '{"count":1}' > "$out/corpus/write"
    seed 'stats\0' UPDATE 7 client-a 3 '{"count":1}' > "$out/corpus/update"
    seed 'stats\0' SYNCED client-a > "$out/corpus/synced"
    seed ERROR too-large "value too large" stats 9 > "$out/corpus/error"
    ;;
  json)
    sources=(Sources/QuickJSON/*.swift Fuzz/JSONDecoderFuzzer.swift)
    printf '%s' '{"count":1,"name":"a\"\\u00e9","ratio":-1.5e3,"on":true}' > "$out/corpus/flat"
    printf '%s' '{"flat":{"count":0},"list":[null,{"count":2}],"table":{"k":[1,65535]},"kind":{"tagged":{"_0":-8,"label":null}},"deep":[[[1e-3,null]]]}' > "$out/corpus/nested"
    printf '%s' '[0.1, 2, -0, 1E+2]' > "$out/corpus/doubles"
    printf '%s' '{"count":2,"blob":"+\/8=","on":false}' > "$out/corpus/data"
    printf '%s' '{"a":-9223372036854775808,"b":9223372036854775807}' > "$out/corpus/table"
    printf '%s' '{"count":3,"names":["a\/b","\u0001"],"table":{"B":1,"a":null},"nested":[{"count":-1}]}' > "$out/corpus/plain"
    printf '%s' '{"count":3,"names":["a\/b","\ud83d\ude00"],"nested":[{"count":-1,"extra":true,"names":[]}],"table":{"B":1,"a":null}}' > "$out/corpus/sorted"
    printf '%s' ' { "a" : 1 , "count" : 0 , "nested" : [ ] , "z" : "" } ' > "$out/corpus/spaced"
    ;;
  *) echo "unknown target $target (frames or json)" >&2; exit 64 ;;
esac
swiftc -O -swift-version 6 -parse-as-library -sanitize=fuzzer,address -module-name Fuzz \
  -package-name fuzz -enable-upcoming-feature InternalImportsByDefault \
  "${sources[@]}" -o "$out/fuzzer" 2>&1 \
  | { grep -v "Cannot export local symbol" || true; } >&2
# libFuzzer reports crashes itself; Swift's backtracer would stall on the sanitized binary.
SWIFT_BACKTRACE=enable=no "$out/fuzzer" -runs="$runs" -max_len=512 -seed=1 \
  -print_final_stats=1 -artifact_prefix="$out/" "$out/corpus" 2>&1 \
  | tee "$out/last-run.log" | grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss_mb)" || true
executed=$(grep -oE "stat::number_of_executed_units: [0-9]+" "$out/last-run.log" | grep -oE "[0-9]+$" || echo 0)
if grep -qE "ERROR: (libFuzzer|AddressSanitizer)|Fatal error" "$out/last-run.log"; then
  echo "$target fuzzer: $executed inputs, 1 crash (see $out/last-run.log)"
  exit 1
fi
echo "$target fuzzer: $executed inputs, 0 crashes"
