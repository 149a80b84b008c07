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
# -E 0: a lock held by another host is exit 0 and, as with flock -n -E 0, not
# a word on stderr. A CMD exiting 75 is CMD's.
exec redlock-cli run "$name" --ttl 60s -E 0 -- "$@"
