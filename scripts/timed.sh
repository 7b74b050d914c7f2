#!/usr/bin/env bash
# timed.sh NAME CMD...: runs CMD and prints how long it took, pass or fail,
# so a slow or failing step of `make test` names itself.
name=$1
shift
start=$SECONDS
"$@"
rc=$?
echo "make test: step $name: $((SECONDS - start)) s, exit $rc"
exit $rc
