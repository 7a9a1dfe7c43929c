#!/usr/bin/env bash
# Uses SharedMirror from outside, as a user's package does: Examples/Consumer depends on it by
# path and tests a feature with TestStore and BrokerFixture. Three runs, each of which must end
# as stated:
#   1. set up as a user who forgot ComposableTestSupport: the run fails and says what to add;
#   2. set up as the README and the testing article say: the tests pass (one records a known
#      issue);
#   3. the same, with wrong assertions switched on: the run fails, naming both tests.
set -uo pipefail

SWIFT=${SWIFT:-swift}
cd "$(dirname "$0")/../Examples/Consumer" || exit 1
log=.build/consumer-check.log

fail() { echo "consumer-check: $*" >&2; [[ -f $log ]] && tail -40 "$log" >&2; exit 1; }

# swift test; its output goes to the log, its status is returned.
run_tests() {
  mkdir -p .build
  env "$@" "$SWIFT" test --skip-build > "$log" 2>&1
}

# SwiftPM caches the source list of a path dependency: a file added to SharedMirror since the
# consumer's last build would be missing from it.
find .build -name description.json -delete 2>/dev/null

# Run 1. IssueReporting would load a libIssueReportingTestSupport.so that merely lies in the
# build folder (left by run 2 of an earlier check), which would hide a missing link: the folder
# must not hold one.
find .build -name 'libIssueReportingTestSupport.so' -delete 2>/dev/null
CONSUMER_SETUP=naive "$SWIFT" build --build-tests || fail "the naive set-up does not build"
[[ -z $(find .build -name 'libIssueReportingTestSupport.so') ]] \
  || fail "the naive set-up built libIssueReportingTestSupport.so, so it proves nothing"
run_tests CONSUMER_SETUP=naive && fail "a test target without ComposableTestSupport passed"
grep -q '.product(name: "ComposableTestSupport", package: ' "$log" \
  || fail "the naive set-up failed without saying what to add"
echo "consumer-check: without ComposableTestSupport the run fails and names the product"

# Run 2.
"$SWIFT" build --build-tests || fail "the consumer package does not build"
run_tests || fail "the consumer's tests failed"
grep -q 'aWrongAssertionIsRecorded() passed .* with 1 known issue' "$log" \
  || fail "withKnownIssue did not see the TestStore failure"
echo "consumer-check: the consumer's tests pass"

# The app that only mirrors a value links the client, not the server's metrics, service
# lifecycle or NIO.
app=$("$SWIFT" build --show-bin-path)/tally
[[ -x $app ]] || fail "the tally app was not built"
server=$(nm "$app" | grep -cE 'SharedBrokerServer|ServiceLifecycle|CoreMetrics|NIOHTTP1|NIOPosix')
[[ $server == 0 ]] || fail "the tally app links $server symbols of the server or its dependencies"
echo "consumer-check: the tally app ($(du -k "$app" | cut -f1) KiB) links no server code"

# And it works: two taps through the project's own broker, on ports the system picks.
broker=$(cd ../.. && "$SWIFT" build --show-bin-path)/broker
[[ -x $broker ]] || fail "build the project first: no broker at $broker"
broker_log=.build/consumer-broker.log
"$broker" --listen 'tcp://127.0.0.1:*' --publish 'tcp://127.0.0.1:*' > "$broker_log" 2>&1 &
broker_pid=$!
trap 'kill $broker_pid 2>/dev/null' EXIT
router=""
for _ in $(seq 100); do
  router=$(grep -o 'router=tcp://[0-9.]*:[0-9]*' "$broker_log" | head -1 | cut -d= -f2)
  [[ -n $router ]] && break
  sleep 0.1
done
[[ -n $router ]] || fail "the broker did not say where it listens: $(cat "$broker_log")"
taps=$(for _ in 1 2; do SHARED_BROKER_URL=$router "$app" 2>/dev/null | tail -1; done | tr '\n' ' ')
[[ $taps == "1 2 " ]] || fail "two tally taps printed '$taps', not '1 2'"
kill $broker_pid
echo "consumer-check: the tally app taps through a broker: $taps"

# Run 3.
run_tests CONSUMER_WRONG_ASSERTIONS=1 && fail "wrong assertions passed"
for test in wrongAssertionFails unassertedSharedChangeFails; do
  grep -q "Test $test() failed" "$log" || fail "$test did not fail"
done
echo "consumer-check: wrong assertions fail the run"
