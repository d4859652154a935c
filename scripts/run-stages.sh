# Stages of a long test run, and the table that ends it (sourced by
# run-tests; exercised by Tests/scripts/run-stages-tests.sh). Each stage's
# output goes through as it comes, less the lines known to be harmless; its
# result, count and time are kept for the closing table, whose last line,
# "N passed, M failed", counts the stages: CI reads the run by its end.
#
#   stage NAME COUNTER COMMAND...   runs COMMAND; COUNTER is swift, unittest,
#                                   passed-failed or none (how to count it)
#   skip_stage NAME WHY             a stage that does not apply here
#   stages_finish                   prints the table; status 1 if a stage failed
#   run_stage NAME COUNTER COMMAND...   stage, and when it fails: the table, exit 1
#
# stage returns COMMAND's status; STAGE_LOG names the file holding the
# stage's (filtered) output until the next stage starts.

# Known-harmless noise, hidden from the output (and counted in the table's
# footnote). Nothing else is hidden, never an error:
#  - SwiftPM's warning that swift-distributed-tracing has CMakeLists.txt
#    files it does not use (one warning and one path line per file);
#  - XCTest's "Executed 0 tests" line: the tests use Swift Testing, whose own
#    closing line follows it and counts them.
STAGE_NOISE=(
    "^warning: 'swift-distributed-tracing': found [0-9]+ file\(s\) which are unhandled; explicitly declare them as resources or exclude from the target$"
    "^[[:space:]]+/.*/checkouts/swift-distributed-tracing/.*/CMakeLists\.txt$"
    "^[[:space:]]*Executed 0 tests, with 0 failures \(0 unexpected\)"
)

STAGE_NAMES=()
STAGE_RESULTS=()
STAGE_COUNTS=()
STAGE_TIMES=()
STAGE_HIDDEN=0
STAGE_DIR=$(mktemp -d "${TMPDIR:-/tmp}/run-stages.XXXXXX")
STAGE_LOG="$STAGE_DIR/stage.log"
trap 'rm -rf "$STAGE_DIR"' EXIT

# stdin to stdout less the noise; the number of lines hidden to the file $1.
stage_filter() {
    local line pattern hidden=0
    while IFS= read -r line || [ -n "$line" ]; do
        for pattern in "${STAGE_NOISE[@]}"; do
            if [[ $line =~ $pattern ]]; then
                hidden=$((hidden + 1))
                continue 2
            fi
        done
        printf '%s\n' "$line"
    done
    echo "$hidden" >"$1"
}

# The count of a stage's tests from its log ($2), by the kind of runner ($1);
# empty when there is none.
stage_count() {
    local line
    case $1 in
    swift)
        # Swift Testing's closing line: "Test run with N tests in M suites passed after ..."
        # or "... failed after ... with K issues."
        line=$(grep -E 'Test run with [0-9]+ tests? in [0-9]+ suites? (passed|failed)' "$2" | tail -n 1)
        [[ $line =~ with\ ([0-9]+)\ tests?\ in\ ([0-9]+)\ suites? ]] || return 0
        printf '%s tests' "${BASH_REMATCH[1]}"
        [[ $line =~ with\ ([0-9]+)\ issues? ]] && printf ', %s issues' "${BASH_REMATCH[1]}"
        ;;
    unittest)
        line=$(grep -E '^Ran [0-9]+ tests? in ' "$2" | tail -n 1)
        [[ $line =~ ^Ran\ ([0-9]+) ]] && printf '%s tests' "${BASH_REMATCH[1]}"
        ;;
    passed-failed)
        # "NAME: N passed, M failed", maybe followed by "(T s)" (deb-tests.sh).
        line=$(grep -E '^([^ ]+: )?[0-9]+ passed, [0-9]+ failed( \([^)]*\))?$' "$2" | tail -n 1)
        [[ $line =~ ([0-9]+)\ passed,\ ([0-9]+)\ failed ]] && printf '%s checks' "$((BASH_REMATCH[1] + BASH_REMATCH[2]))"
        ;;
    esac
    return 0
}

stage_record() {  # NAME RESULT COUNT TIME
    STAGE_NAMES+=("$1")
    STAGE_RESULTS+=("$2")
    STAGE_COUNTS+=("$3")
    STAGE_TIMES+=("$4")
}

stage() {
    local name=$1 counter=$2 started status elapsed hidden
    shift 2
    echo "run-tests: ── $name"
    started=${EPOCHREALTIME//[.,]/}
    "$@" 2>&1 | stage_filter "$STAGE_DIR/hidden" | tee "$STAGE_LOG"
    status=${PIPESTATUS[0]}
    elapsed=$(( (${EPOCHREALTIME//[.,]/} - started) / 100000 ))  # tenths of a second
    read -r hidden <"$STAGE_DIR/hidden" || hidden=0
    STAGE_HIDDEN=$((STAGE_HIDDEN + hidden))
    stage_record "$name" "$([ "$status" -eq 0 ] && echo pass || echo FAIL)" "$(stage_count "$counter" "$STAGE_LOG")" \
        "$((elapsed / 10)).$((elapsed % 10)) s"
    return "$status"
}

skip_stage() {
    echo "run-tests: ── $1: skipped: $2"
    stage_record "$1" skipped "" ""
}

stages_finish() {
    local i passed=0 failed=0
    echo
    echo "run-tests: summary"
    printf '%-28s %-8s %-22s %10s\n' stage result count time
    for i in "${!STAGE_NAMES[@]}"; do
        printf '%-28s %-8s %-22s %10s\n' "${STAGE_NAMES[i]}" "${STAGE_RESULTS[i]}" "${STAGE_COUNTS[i]}" "${STAGE_TIMES[i]}"
        case ${STAGE_RESULTS[i]} in
        pass) passed=$((passed + 1)) ;;
        FAIL) failed=$((failed + 1)) ;;
        esac
    done
    if [ "$STAGE_HIDDEN" -gt 0 ]; then
        echo "run-tests: $STAGE_HIDDEN known-harmless lines hidden (swift-distributed-tracing's unhandled CMakeLists.txt, XCTest's \"Executed 0 tests\")"
    fi
    [ "$failed" -eq 0 ] || echo "run-tests: stopped at the failed stage; later stages did not run"
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
}

# What run-tests does with each stage: a failed one ends the run, with the table.
run_stage() {
    stage "$@" || { stages_finish; exit 1; }
}
