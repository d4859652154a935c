#!/usr/bin/env bash
# Checks scripts/run-stages.sh, the stages and closing table of run-tests,
# with stand-in stages (no build, no test run): the counts parsed from
# Swift Testing's, unittest's and the shell tests' closing lines; the noise
# hidden and nothing else; a failed stage ending the run with the table, the
# line "N passed, M failed" last and a non-zero status. Prints one line per
# check and "N passed, M failed"; exits 1 if any failed.
set -uo pipefail
cd "$(dirname "$0")/../.."

passed=0
failed=0
pass() { passed=$((passed + 1)); echo "run-stages-tests: PASS $1"; }
fail() { failed=$((failed + 1)); echo "run-stages-tests: FAIL $1"; printf '%s\n' "$2" | sed 's/^/    /'; }
expect() {  # NAME PATTERN TEXT: TEXT has a line matching the extended PATTERN
    if printf '%s\n' "$3" | grep -qE -- "$2"; then pass "$1"; else fail "$1" "$3"; fi
}
refuse() {  # NAME PATTERN TEXT: no line of TEXT matches PATTERN
    if printf '%s\n' "$3" | grep -qE -- "$2"; then fail "$1" "$3"; else pass "$1"; fi
}

noisy_swift_test() {
    echo "warning: 'swift-distributed-tracing': found 1 file(s) which are unhandled; explicitly declare them as resources or exclude from the target"
    echo "    /work/main/.build/checkouts/swift-distributed-tracing/Sources/Tracing/CMakeLists.txt"
    printf '\t Executed 0 tests, with 0 failures (0 unexpected) in 0.0 (0.0) seconds\n'
    echo "warning: 'swift-nio': something else worth reading"
    echo "✔ Test run with 1234 tests in 56 suites passed after 300.2 seconds."
}
python_tests() { printf 'test_a (t.T) ... ok\n\nRan 41 tests in 2.5s\n\nOK\n' >&2; }
shell_tests() { echo "verify-units: PASS x"; echo "fuzz: 9 passed, 0 failed (12 s)"; }
failing_tests() {
    echo "error: compile error in Foo.swift"
    printf '\t Executed 3 tests, with 1 failure (0 unexpected) in 0.1 (0.1) seconds\n'
    echo "✘ Test run with 20 tests in 4 suites failed after 1.5 seconds with 2 issues."
    return 3
}

# The stand-ins reach the inner shell exported.
export -f noisy_swift_test python_tests shell_tests failing_tests

# A run that passes: run_stage as run-tests uses it, under its shell options.
out=$(bash -c 'set -euo pipefail; . scripts/run-stages.sh
    run_stage "swift test" swift "$1"; run_stage python unittest "$2"; run_stage shell passed-failed "$3"
    skip_stage "deb tests" "needs root"; stages_finish' run \
    noisy_swift_test python_tests shell_tests 2>&1)
status=$?

[ "$status" -eq 0 ] && pass "a run that passes exits 0" || fail "a run that passes exits 0 (status $status)" "$out"
expect "swift: the count from Swift Testing's closing line" '^swift test +pass +1234 tests +[0-9]+\.[0-9] s$' "$out"
expect "unittest: the count from 'Ran N tests'" '^python +pass +41 tests +[0-9]+\.[0-9] s$' "$out"
expect "shell tests: the count from 'N passed, M failed'" '^shell +pass +9 checks +[0-9]+\.[0-9] s$' "$out"
expect "a skipped stage is listed as skipped" '^deb tests +skipped' "$out"
refuse "the distributed-tracing warnings and XCTest's 'Executed 0 tests' are hidden" \
    "^warning: 'swift-distributed-tracing'|CMakeLists\.txt\$|^[[:space:]]*Executed 0 tests" "$out"
expect "other warnings are not hidden" "^warning: 'swift-nio': something else" "$out"
expect "Swift Testing's closing line stays" '^✔ Test run with 1234 tests in 56 suites passed' "$out"
expect "the hidden lines are counted" '^run-tests: 3 known-harmless lines hidden' "$out"
last=$(printf '%s\n' "$out" | tail -n 1)
[ "$last" = "3 passed, 0 failed" ] && pass "the last line counts the stages" || fail "the last line counts the stages" "$out"

# A run whose second stage fails: the table, exit 1, the third never runs.
out=$(bash -c 'set -euo pipefail; . scripts/run-stages.sh
    run_stage python unittest "$1"; run_stage broken swift "$2"; run_stage never none echo ran-after-failure
    stages_finish' run python_tests failing_tests 2>&1)
status=$?
[ "$status" -eq 1 ] && pass "a failed stage ends the run with status 1" || fail "a failed stage ends the run with status 1 (status $status)" "$out"
expect "the failed stage is in the table, with its tests and issues" '^broken +FAIL +20 tests, 2 issues +[0-9]+\.[0-9] s$' "$out"
expect "errors are not hidden" '^error: compile error in Foo.swift$' "$out"
expect "XCTest's line with tests run is not hidden" 'Executed 3 tests, with 1 failure' "$out"
refuse "no stage runs after a failed one" 'ran-after-failure|^never ' "$out"
last=$(printf '%s\n' "$out" | tail -n 1)
[ "$last" = "1 passed, 1 failed" ] && pass "the last line counts the failed stage" || fail "the last line counts the failed stage" "$out"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
