#!/bin/sh
# cron-job.sh - run a cron job on one host at a time, though cron starts it on every host.
#
#   */10 * * * *  REDLOCK_MASTERS=10.0.0.1:6379,10.0.0.2:6379,10.0.0.3:6379,10.0.0.4:6379,10.0.0.5:6379 \
#                 /usr/local/bin/cron-job.sh nightly-report /usr/local/bin/report --full
#
# Holds the Redlock lock NAME while CMD runs: redlock-cli extends it as long
# as CMD runs, and stops CMD if the lock is lost. When another host holds the
# lock it exits 0 without a word, so cron mails nothing; anything else (masters
# down, bad setup, CMD failing) is printed and ends in a non-zero status.
set -u
[ $# -ge 2 ] || { echo "usage: cron-job.sh NAME CMD [ARG...]" >&2; exit 64; }
[ -n "${REDLOCK_MASTERS:-}" ] || { echo "cron-job.sh: set REDLOCK_MASTERS to the masters' host:port,..." >&2; exit 78; }
name=$1; shift
msgs=$(mktemp) || exit 70
trap 'rm -f "$msgs"' EXIT
# TODO(lead): --ttl 60s once durations take units.
# CMD's stderr goes to fd 3 (ours), so that $msgs holds redlock-cli's messages only.
exec 3>&2
redlock-cli run "$name" --ttl 60000 -- sh -c 'exec "$@" 2>&3' sh "$@" 2>"$msgs"; rc=$?
# 75 is also what CMD may return itself: a conflict is 75 with redlock-cli saying so.
# TODO(lead): with redlock-cli's coming -E/--conflict-exit-code, test for that code instead.
if [ "$rc" -eq 75 ] && grep -q 'held by another client' "$msgs"; then exit 0; fi
cat "$msgs" >&2
exit "$rc"
