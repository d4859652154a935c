#!/usr/bin/env bash
# Builds Examples/UserPackage the way a user's package gets Mediator: from a
# clone of this repository tagged with its version, resolved by SwiftPM as a
# versioned dependency (`from:`), the generated code made by the plugin, and
# runs its tests (`swift test`: MediatorTesting, no daemon). Then it starts
# the mediatord built here, serves the package's Hello target with
# its `hello serve`, and calls it with `hello call` (Swift), with mediatorctl,
# and from Python through a module generated from the same interface file.
#
# Needs git, python3 and the binaries of `swift build` (mediatord, mediatorctl).
# The last line is "N passed, M failed"; the exit status is non-zero when
# anything failed. The package's first build compiles SwiftNIO and friends:
# a few minutes on 2 cores.
set -uo pipefail
cd "$(dirname "$0")/../.."
top=$PWD

passed=0
failed=0
pass() { passed=$((passed + 1)); echo "user-package: PASS $1"; }
fail() { failed=$((failed + 1)); echo "user-package: FAIL $1"; [ $# -gt 1 ] && printf '%s\n' "${2%$'\n'}" | sed 's/^/    /'; }
finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit
}

bin=$(swift build --show-bin-path 2>/dev/null)
if [ -z "$bin" ] || [ ! -x "$bin/mediatord" ] || [ ! -x "$bin/mediatorctl" ]; then
  fail "binaries" "no mediatord and mediatorctl in '${bin}' (swift build first)"
  finish
fi
version=$(sed -n 's/.*static let current = "\(.*\)".*/\1/p' Protocol/MediatorVersion.swift)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/user-package.XXXXXX")
daemon=""
component=""
cleanup() {
  [ -n "$component" ] && kill "$component" 2>/dev/null
  [ -n "$daemon" ] && kill "$daemon" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

# The repository as committed (HEAD), cloned and tagged: what a user's
# `.package(url:from:)` resolves. The clone is named "mediator", as the URL
# in the package's manifest ends.
if out=$(git clone -q "$top" "$tmp/mediator" 2>&1 && git -C "$tmp/mediator" tag "$version" 2>&1); then
  pass "a clone of HEAD tagged $version"
else
  fail "clone and tag" "$out"
  finish
fi
cp -R Examples/UserPackage "$tmp/app"
url='https://git.example.org/mediator.git'
if ! grep -qF "\"$url\"" "$tmp/app/Package.swift"; then
  fail "Examples/UserPackage/Package.swift no longer names $url"
  finish
fi
sed -i "s|\"$url\"|\"file://$tmp/mediator\"|" "$tmp/app/Package.swift"

if out=$(cd "$tmp/app" && swift build 2>&1); then
  pass "the package resolves Mediator $version from the tagged clone and builds (plugin included)"
else
  fail "swift build of the user package" "$(printf '%s\n' "$out" | grep -v -E "swift-distributed-tracing|CMakeLists" | tail -n 40)"
  finish
fi
hello=$(cd "$tmp/app" && swift build --show-bin-path)/hello

# Its own tests, through MediatorTesting: no mediatord runs yet.
# Swift Testing's summary names the suite, so a build that found no tests fails here.
if out=$(cd "$tmp/app" && swift test 2>&1) && printf '%s\n' "$out" | grep -q 'Suite GreeterTests passed'; then
  pass "swift test of the user package (MediatorTesting, no mediatord)"
else
  fail "swift test of the user package" "$(printf '%s\n' "$out" | grep -v -E "swift-distributed-tracing|CMakeLists" | tail -n 40)"
fi

export MEDIATOR_SOCKET="$tmp/mediator.sock"
"$bin/mediatord" --socket "$MEDIATOR_SOCKET" --components "$tmp/none" --policy "$tmp/none" >"$tmp/mediatord.log" 2>&1 &
daemon=$!
# Bounded waits: up to 20 s each, for the daemon and for the registration.
ready=""
for _ in $(seq 200); do
  "$bin/mediatorctl" --timeout 1 ping >/dev/null 2>&1 && { ready=yes; break; }
  sleep 0.1
done
if [ -z "$ready" ]; then
  fail "mediatord did not answer ping" "$(tail -n 20 "$tmp/mediatord.log")"
  finish
fi
"$hello" serve >"$tmp/hello.out" 2>&1 &
component=$!
ready=""
for _ in $(seq 200); do
  grep -q '^ready$' "$tmp/hello.out" && { ready=yes; break; }
  kill -0 "$component" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$ready" ]; then
  fail "hello serve did not register" "$(cat "$tmp/hello.out")"
  finish
fi
pass "hello serve registered Hello"

out=$("$hello" call Ann 2>&1)
if [ "$out" = "Hello, Ann!" ]; then pass "hello call (generated Swift client)"; else fail "hello call" "$out"; fi

# The daemon checks calls against the interface file's schema: minLength 1.
out=$("$hello" call "" 2>&1)
case $out in
  *invalid_params*) pass "an empty name is refused with invalid_params" ;;
  *) fail "hello call with an empty name" "$out" ;;
esac

out=$("$bin/mediatorctl" call Hello greet name=Bo 2>&1)
case $out in
  *'"Hello, Bo!"'*) pass "mediatorctl call Hello greet" ;;
  *) fail "mediatorctl call Hello greet" "$out" ;;
esac

if out=$("$bin/mediatorctl" generate python Examples/UserPackage/Sources/hello/Hello.mediator.json --output "$tmp" 2>&1) &&
  out=$(PYTHONPATH="$top/python:$tmp" python3 -c '
import mediator, hello
client = hello.HelloClient(mediator.connect(name="hello-py"))
print(client.greet(hello.GreetParams(name="Cy")).greeting)' 2>&1) && [ "$out" = "Hello, Cy!" ]; then
  pass "a generated Python client calls the Swift component"
else
  fail "the generated Python client" "$out"
fi
finish
