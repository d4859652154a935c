#!/usr/bin/env bash
# Fuzzes the frame decoder and the message parsers with libFuzzer.
#
#   Tests/Fuzz/run-fuzz.sh [SECONDS [TARGET...]]
#
# SECONDS is the fuzzing time per target (default 30); TARGETs are among
# framing, url and schema (default: all). Each target Tests/Fuzz/Fuzz<Name>.swift
# is built with swiftc -sanitize=fuzzer,address (fuzzer alone when ASan does
# not link) together with the Protocol sources and the invariants of
# Tests/MediatorProtocolTests/FuzzRegressionTests.swift, and runs from the seeds
# in Tests/Fuzz/corpus/<target>/ plus what earlier runs found
# (.build/fuzz/corpus/<target>/, kept between runs, never committed).
#
# An input that crashes or breaks an invariant is copied to
# Tests/Fuzz/crashes/<target>-crash-<sha1>; commit it: `swift test` then runs it
# in FuzzRegressionTests. The last line is `fuzz: N passed, M failed`; the exit
# status is 1 when a target failed or did not build.
#
# Needs only the Swift toolchain (its libFuzzer and ASan runtimes) and coreutils.
# Environment: FUZZ_JOBS (parallel workers per target, default 1); FUZZ_OPT
# (default -O; -Onone is slower but keeps the standard library's bounds checks
# on unsafe buffers); SWIFTC.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="/opt/swift/usr/bin:$PATH"

seconds=${1:-30}
shift || true
case "$seconds" in '' | *[!0-9]*) echo "usage: $0 [SECONDS [TARGET...]]" >&2; exit 2 ;; esac
all_targets=(framing url schema)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")

swiftc=${SWIFTC:-$(command -v swiftc || true)}
[ -n "$swiftc" ] || { echo "fuzz: swiftc not found (put the Swift toolchain on PATH)" >&2; exit 2; }
jobs=${FUZZ_JOBS:-1}
opt=${FUZZ_OPT:--O}

work=.build/fuzz
crashes=Tests/Fuzz/crashes
mkdir -p "$work"

# A Swift runtime trap must reach libFuzzer's handler, which writes the input
# out: Swift's own backtracer would take over, and it can hang under ASan.
export SWIFT_BACKTRACE=enable=no
symbolizer=$(dirname "$swiftc")/llvm-symbolizer
[ -x "$symbolizer" ] && export ASAN_SYMBOLIZER_PATH="$symbolizer"

name_of() {  # framing -> Framing, url -> URL
    case "$1" in url) echo URL ;; *) echo "$(echo "${1:0:1}" | tr a-z A-Z)${1:1}" ;; esac
}

# Readable Swift names in sanitizer stacks.
demangle=cat
if "$(dirname "$swiftc")/swift-demangle" --help >/dev/null 2>&1; then
    demangle="$(dirname "$swiftc")/swift-demangle --simplified"
fi

sanitizers=fuzzer,address
build() {  # build TARGET: .build/fuzz/fuzz-TARGET
    local target=$1 source
    source=Tests/Fuzz/Fuzz$(name_of "$target").swift
    [ -f "$source" ] || { echo "fuzz: no $source" >&2; return 1; }
    # -package-name: Protocol/ has `package` declarations, which SwiftPM's builds name a package for.
    local args=(-swift-version 6 "$opt" -g -parse-as-library -module-name MediatorFuzz -package-name Mediator -D MEDIATOR_FUZZ
        "$source" Tests/MediatorProtocolTests/FuzzRegressionTests.swift Protocol/*.swift
        -o "$work/fuzz-$target")
    if "$swiftc" "${args[@]}" -sanitize="$sanitizers" >"$work/build-$target.log" 2>&1; then return 0; fi
    if [ "$sanitizers" = fuzzer,address ]; then
        # Without a working ASan, libFuzzer alone still finds traps and hangs.
        echo "fuzz: building with ASan failed (see $work/build-$target.log); trying -sanitize=fuzzer alone" >&2
        sanitizers=fuzzer
        "$swiftc" "${args[@]}" -sanitize="$sanitizers" >"$work/build-$target.log" 2>&1 && return 0
    fi
    grep -v 'Cannot export local symbol' "$work/build-$target.log" | tail -30 >&2
    return 1
}

passed=0
failed=0
for target in "${targets[@]}"; do
    echo "fuzz: building $target"
    if ! build "$target"; then
        echo "fuzz: $target FAILED to build" >&2
        failed=$((failed + 1))
        continue
    fi

    corpus=$work/corpus/$target
    artifacts=$work/artifacts/$target
    rm -rf "$artifacts"
    mkdir -p "$corpus" "$artifacts" "$crashes"
    options=(-max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048
        -print_final_stats=1 -artifact_prefix="$artifacts/")
    [ -f "Tests/Fuzz/$target.dict" ] && options+=(-dict="Tests/Fuzz/$target.dict")
    if [ "$jobs" -gt 1 ]; then options+=(-fork="$jobs" -ignore_crashes=0); fi

    echo "fuzz: running $target for ${seconds}s ($sanitizers; log: $work/$target.log)"
    status=0
    # The outer bound covers loading the corpus and a hung process.
    timeout --kill-after=30 $((seconds + 120)) "$work/fuzz-$target" "${options[@]}" \
        "$corpus" "Tests/Fuzz/corpus/$target" >"$work/$target.log" 2>&1 || status=$?

    kept=()
    for artifact in "$artifacts"/crash-* "$artifacts"/timeout-* "$artifacts"/oom-* "$artifacts"/leak-*; do
        [ -f "$artifact" ] || continue
        destination=$crashes/$target-$(basename "$artifact")
        cp "$artifact" "$destination"
        kept+=("$destination")
    done

    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$target.log" | tail -1)
    speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/$target.log" | tail -1)
    if [ -z "$runs" ]; then  # -fork prints "#RUNS: cov: ..." lines and no final stats
        runs=$(sed -n 's/^#\([0-9]*\): cov:.*/\1/p' "$work/$target.log" | tail -1)
        [ -z "$runs" ] || speed=$((runs / (seconds > 0 ? seconds : 1)))
    fi
    coverage=$(grep -a -o 'cov: [0-9]* ft: [0-9]* corp: [0-9]*\(/[0-9a-zA-Z]*\)\?' "$work/$target.log" | tail -1 || true)
    if [ "$status" -eq 0 ] && [ ${#kept[@]} -eq 0 ]; then
        echo "fuzz: $target passed: ${runs:-?} runs, ${speed:-?} exec/s, ${coverage:-no coverage line}"
        passed=$((passed + 1))
        continue
    fi

    failed=$((failed + 1))
    echo "fuzz: $target FAILED (exit status $status)" >&2
    # The report: the broken invariant or the sanitizer's error, and its stack.
    report=$(awk '/Fatal error|ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|^==[0-9]+== ERROR/ { p = 1 } p' \
        "$work/$target.log" | grep -a -v -e '^ *0x[0-9a-f]*: ' -e 'Shadow byte' | head -40)
    [ -n "$report" ] || report=$(tail -20 "$work/$target.log")
    printf '%s\n' "$report" | $demangle >&2
    if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
        echo "fuzz: $target did not finish within $((seconds + 120))s and was killed" >&2
    fi
    for file in "${kept[@]}"; do
        echo "fuzz: kept the input as $file" >&2
        echo "fuzz:   reproduce: $work/fuzz-$target $file" >&2
    done
    [ ${#kept[@]} -eq 0 ] || echo "fuzz: commit it: swift test runs it in FuzzRegressionTests" >&2
done

echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
