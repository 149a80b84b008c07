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
# CMD's stderr goes to fd 3 (ours), so that $msgs holds redlock-cli's messages only.
exec 3>&2
# -E 0: a lock held by another host is exit 0, like flock -E 0; its one line
# of news is no news for cron, so it is left out. A CMD exiting 75 is CMD's.
redlock-cli run "$name" --ttl 60s -E 0 -- sh -c 'exec "$@" 2>&3' sh "$@" 2>"$msgs"; rc=$?
grep -v 'held by another client' "$msgs" >&2
exit "$rc"
