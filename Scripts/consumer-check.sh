#!/usr/bin/env bash
# Uses SharedMirror from outside, as a user's package does: Examples/Consumer depends on it by
# path and tests a feature with TestStore and BrokerFixture. Three runs, each of which must end
# as stated:
#   1. set up as a user who forgot ComposableTestSupport: the run fails and says what to add;
#   2. set up as the README says: the tests pass (one records a known issue);
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

# Run 3.
run_tests CONSUMER_WRONG_ASSERTIONS=1 && fail "wrong assertions passed"
for test in wrongAssertionFails unassertedSharedChangeFails; do
  grep -q "Test $test() failed" "$log" || fail "$test did not fail"
done
echo "consumer-check: wrong assertions fail the run"
