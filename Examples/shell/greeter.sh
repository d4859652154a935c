#!/bin/sh
# A Mediator component written as a shell script, served by mediatorctl:
#
#   mediatorctl serve Greeter --exec Examples/shell/greeter.sh \
#       --action hello --action fail --action env
#
# For each call mediatorctl runs `greeter.sh ACTION` with the call's params
# (a JSON object) on stdin. Whatever JSON is printed on stdout is the result;
# a non-zero exit status is an error whose message is what went to stderr.

case "$1" in
hello)
    # {"name": "Ann"} -> {"greeting":"Hello, Ann!"}  (no name: "world")
    params=$(cat)
    [ -n "$params" ] || params='{}'
    if command -v jq >/dev/null 2>&1; then
        printf '%s' "$params" |
            jq -c '{greeting: ("Hello, " + ((.name // "world") | tostring) + "!")}'
    else
        printf '%s' "$params" | python3 -c '
import json, sys
name = json.load(sys.stdin).get("name")
name = "world" if name is None else name
print(json.dumps({"greeting": "Hello, %s!" % name}, separators=(",", ":"), ensure_ascii=False))'
    fi
    ;;
fail)
    echo "something went wrong" >&2
    exit 3
    ;;
env)
    printf '{"action":"%s"}\n' "$1"
    ;;
*)
    echo "greeter.sh: unknown action: ${1:-(none)}" >&2
    exit 2
    ;;
esac
