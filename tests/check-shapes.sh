#!/usr/bin/env bash
# check-shapes.sh FILE...: find four shapes of shell code that have made
# tests that could not fail, or that flaked, and print FILE:LINE: WHY
# for each. Exit 1 when one was found.
#
# 1. An asserting function inside a command substitution. Bash turns
#    errexit off in $(...) (unless inherit_errexit), so a "fail" that
#    returns 1 in the middle of the function does not stop it, and the
#    verdict helpers that exit (not_yet, correct) end only the subshell
#    with their message captured. Asserting functions are the helpers
#    below and, transitively, every function that calls one.
# 2. An early-exiting reader at the end of a pipeline (grep -q, grep -m,
#    grep -l, head, sed ...q, awk ... exit): it stops reading at the
#    first match, the writer dies of SIGPIPE, and under pipefail the
#    whole pipeline fails although the match was there.
# 3. A multi-line subshell "( ... ) || rc=$?": errexit is off in all of
#    a command whose status is tested, so the assertions in it print
#    FAIL and it goes on. Run it in the background, then wait "$!".
# 4. A trap whose action is a double-quoted string with a value in it
#    (trap "rm -rf '$dir'" EXIT): the value is expanded when the trap is
#    set, so a quote in it (a user's path) turns the rest into code.
#
# A line may opt out with a trailing "# shape-ok: REASON".
set -euo pipefail

ASSERTING="fail skip assert_grep assert_no_grep assert_eq expect_exit correct not_yet cannot_check ex_usage"

if [ $# -eq 0 ]; then
	echo "usage: tests/check-shapes.sh FILE..." >&2
	exit 2
fi
exec awk -v asserting="$ASSERTING" -f "$(dirname "${BASH_SOURCE[0]}")/check-shapes.awk" "$@"
