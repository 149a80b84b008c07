#!/usr/bin/env python3
"""check.py - read a lock history (tests/helpers/history.h) and look for what
must never happen.

Every client of a test wrote one JSON line per operation: who, what, on
which resource, when it was invoked and when it completed (CLOCK_MONOTONIC
µs, one clock for every process on the machine), what it returned, the
lock's token and the end of its validity window. This script rebuilds, for
each lock, the window in which its holder was entitled to act, and reports:

  overlap    two holders of one resource whose windows overlap (a holder's
             window runs from its acquire's completion to the end of its
             validity, moved by successful extends, capped by failed ones,
             and cut at the moment its release was invoked)
  use        a "use" line (the client acted as the holder) overlapping
             another holder's window, unless the client marked it late
  fence      fencing tokens that do not increase in grant order: a grant
             invoked after another one completed must carry a larger token
             (docs/waiting.md, "Fencing tokens", claims no more: grants
             whose calls overlap in time are not ordered). Skipped while
             every fence is 0 (unfenced locks).
  release    a release that returned 0 although its own window had ended
             while another holder's window was open: it may have removed
             someone else's lock (flagged for review)
  key        (with --snapshot) a key seen on a master at the end that has
             no ttl, a ttl above any ttl used, or a token no successful
             operation returned and an expiry beyond the ttl of every
             acquire that had a failed attempt: locks left behind by a
             failed attempt. Tokens are fresh per attempt, and a failed
             attempt's release can be lost with its connection (the master
             keeps that key for its ttl), so such a key comes from a failed
             acquire or from an earlier attempt of a granted one
             ("attempts" > 1); either completed after its SET. A
             hand-off reservation ("\x01" + hand|channel|id,
             docs/waiting.md, "Waiting in turn: the fair hand-off") names a
             waiter, not a holder: it may be left for a waiter that is gone,
             and must lapse within its hand window (the number before the
             first '|')
  token      one token granted twice (tokens are fresh per attempt)

Each violation is printed with the history around it (--context lines
before and after each line involved), then one summary line, always:
"checked N ops, M holders, K violations". Exit status: 0 clean, 1 one or
more violations, 2 unreadable input.

--explain-lost-keys: a test that made a master lose its keys (FLUSHALL, a
restart without persistence) records it as a fault line with "lost": 1.
Redlock's safety argument assumes masters keep what they grant
(docs/safety.md, "Assumptions (the timing model)", A2), so an overlap in
which the earlier holder's grant no longer has a majority of masters that
kept its key is what that fault predicts, not a bug in the engine. With
this option such overlaps are listed as "explained" and do not count as
violations; every other one still does.
"""

import argparse
import json
import sys

LOCK_OPS = ("acquire", "extend", "release", "use")
ALL_OPS = LOCK_OPS + ("fault", "key")


class BadInput(Exception):
    pass


class Rec:
    """One line of a history or snapshot file."""

    def __init__(self, fname, lineno, text, d):
        self.fname = fname
        self.lineno = lineno
        self.text = text
        self.d = d
        self.op = d.get("op")
        if self.op not in ALL_OPS:
            raise BadInput("%s:%d: unknown op %r" % (fname, lineno, self.op))
        self.client = d.get("client", "?")
        self.res = d.get("res")
        self.token = d.get("token")
        self.invoke = self._int("invoke", required=True)
        self.complete = self._int("complete", required=True)
        if self.complete < self.invoke:
            raise BadInput("%s:%d: completes before it is invoked" % (fname, lineno))
        self.rc = self._int("rc", required=self.op in LOCK_OPS)
        self.vend = self._int("vend")
        self.fence = self._int("fence") or 0
        self.ttl = self._int("ttl") or 0
        self.oks = self._int("oks") or 0
        self.attempts = self._int("attempts") or 1   # absent: one attempt
        self.late = bool(self._int("late"))
        self.master = self._int("master")
        self.lost = bool(self._int("lost"))
        self.pttl = self._int("pttl", required=self.op == "key")
        self.what = d.get("what", "")
        if self.op in LOCK_OPS and self.op != "acquire" and self.token is None:
            raise BadInput("%s:%d: %s without a token" % (fname, lineno, self.op))
        if self.op in ("acquire", "extend") and self.rc == 0 and self.vend is None:
            raise BadInput("%s:%d: successful %s without vend" % (fname, lineno, self.op))
        if self.op in LOCK_OPS and self.res is None:
            raise BadInput("%s:%d: %s without res" % (fname, lineno, self.op))

    def _int(self, key, required=False):
        v = self.d.get(key)
        if v is None:
            if required:
                raise BadInput("%s:%d: no %r" % (self.fname, self.lineno, key))
            return None
        if isinstance(v, bool) or not isinstance(v, int):
            raise BadInput("%s:%d: %r is not an integer" % (self.fname, self.lineno, key))
        return v

    def where(self):
        return "%s:%d" % (self.fname, self.lineno)


class Interval:
    """Part of a holder's window: [start, end), set up by one acquire or extend."""

    def __init__(self, holder, start, end, rec):
        self.holder = holder
        self.start = start
        self.end = end
        self.rec = rec


class Holder:
    """One lock: a token granted by a successful acquire (or extend)."""

    def __init__(self, token, res, rec):
        self.token = token
        self.res = res
        self.first = rec
        self.intervals = []
        self.released = None

    def end(self):
        return max((iv.end for iv in self.intervals), default=None)


def load(paths):
    recs = []
    lines = {}
    for path in paths:
        try:
            with open(path, "rb") as f:
                raw = f.read()
        except OSError as e:
            raise BadInput("%s: %s" % (path, e.strerror))
        text = raw.decode("utf-8", errors="replace").split("\n")
        if text and text[-1] == "":
            text.pop()
        lines[path] = text
        for i, line in enumerate(text, 1):
            if not line.strip():
                continue
            try:
                d = json.loads(line)
            except ValueError as e:
                raise BadInput("%s:%d: not JSON (%s): %.80s" % (path, i, e, line))
            if not isinstance(d, dict):
                raise BadInput("%s:%d: not a JSON object" % (path, i))
            recs.append(Rec(path, i, line, d))
    return recs, lines


def short(token):
    if token is None:
        return "-"
    return token[:8] + ("..." if len(token) > 8 else "")


def plural(n, word):
    return "%d %s%s" % (n, word, "" if n == 1 else "s")


def popcount(x):
    return bin(x).count("1")


def masters_of(mask):
    return "{" + ",".join(str(i) for i in range(32) if mask >> i & 1) + "}"


class Checker:
    def __init__(self, recs, lines, opts):
        self.recs = recs
        self.lines = lines
        self.opts = opts
        self.quorum = opts.masters // 2 + 1
        self.t0 = min((r.invoke for r in recs), default=0)
        self.violations = []   # (kind, message, [recs])
        self.explained = []
        self.infos = []
        self.holders = {}      # (res, token) -> Holder
        self.late_ops = 0

    def t(self, us):
        return "%+.6fs" % ((us - self.t0) / 1e6)

    def violation(self, kind, msg, recs):
        self.violations.append((kind, msg, recs))

    # ---- windows ----------------------------------------------------------

    def build(self):
        ops = [r for r in self.recs if r.op in ("acquire", "extend", "release")]
        ops.sort(key=lambda r: (r.complete, r.invoke, r.fname, r.lineno))
        self.releases = []
        for r in ops:
            key = (r.res, r.token)
            h = self.holders.get(key)
            if r.op == "acquire":
                if r.rc != 0:
                    continue
                if r.token is None:
                    raise BadInput("%s: successful acquire without a token" % r.where())
                if h is not None and h.first.op == "acquire":
                    self.violation("token", "token %s granted twice on %r (lines %s and %s)"
                                   % (short(r.token), r.res, h.first.where(), r.where()),
                                   [h.first, r])
                    continue
                h = Holder(r.token, r.res, r)
                h.intervals.append(Interval(h, r.complete, r.vend, r))
                self.holders[key] = h
            elif r.op == "extend":
                if h is None:
                    if r.rc != 0:
                        continue
                    # a lock made from a token taken elsewhere (lock_new)
                    h = Holder(r.token, r.res, r)
                    self.holders[key] = h
                    h.intervals.append(Interval(h, r.complete, r.vend, r))
                    continue
                last = h.intervals[-1]
                if r.rc == 0:
                    if r.complete <= last.end:
                        last.end = r.vend
                        last.rec = r
                    else:
                        h.intervals.append(Interval(h, r.complete, r.vend, r))
                elif r.vend is not None:
                    # a failed extend caps the lease (the library says so
                    # through the lock's validity, which vend records)
                    for iv in h.intervals:
                        iv.end = max(iv.start, min(iv.end, r.vend))
            else:
                own_end = h.end() if h is not None and h.released is None else None
                self.releases.append((r, own_end))
                if h is not None:
                    if h.released is None or r.invoke < h.released.invoke:
                        h.released = r
                    for iv in h.intervals:
                        iv.end = max(iv.start, min(iv.end, r.invoke))

    def intervals(self):
        by_res = {}
        for h in self.holders.values():
            for iv in h.intervals:
                if iv.end > iv.start:
                    by_res.setdefault(h.res, []).append(iv)
        for ivs in by_res.values():
            ivs.sort(key=lambda iv: (iv.start, iv.end))
        return by_res

    # ---- (a) overlapping holders -------------------------------------------

    def lost_masters(self, after, before):
        lost = 0
        for f in self.recs:
            if f.op == "fault" and f.lost and f.master is not None and f.master >= 0:
                if f.complete >= after and f.invoke <= before:
                    lost |= 1 << f.master
        return lost

    def check_overlaps(self, by_res):
        for res, ivs in by_res.items():
            active = []
            for iv in ivs:
                active = [a for a in active if a.end > iv.start]
                for a in active:
                    if a.holder is iv.holder:
                        continue
                    self.report_overlap(res, a, iv)
                active.append(iv)

    def report_overlap(self, res, a, b):
        """a started first; b started while a was open."""
        overlap = min(a.end, b.end) - b.start
        msg = ("holders of %r overlap for %.3f ms: %s (token %s, %s) held [%s, %s) "
               "and %s (token %s, %s) held [%s, %s)"
               % (res, overlap / 1000.0,
                  a.rec.client, short(a.holder.token), a.rec.where(), self.t(a.start), self.t(a.end),
                  b.rec.client, short(b.holder.token), b.rec.where(), self.t(b.start), self.t(b.end)))
        recs = [a.rec, b.rec]
        if a.holder.released is not None:
            recs.append(a.holder.released)
        if self.opts.explain_lost_keys and a.rec.oks:
            lost = self.lost_masters(a.rec.invoke, b.start)
            kept = a.rec.oks & ~lost
            if lost & a.rec.oks and popcount(kept) < self.quorum:
                faults = [f for f in self.recs if f.op == "fault" and f.lost and
                          f.master is not None and f.master >= 0 and lost >> f.master & 1 and
                          f.complete >= a.rec.invoke and f.invoke <= b.start]
                self.explained.append((
                    "overlap",
                    msg + "; explained: %s counted masters %s, and %s lost their keys while it "
                    "held, leaving %d < quorum %d (A2 broken)"
                    % (a.rec.client, masters_of(a.rec.oks), masters_of(lost & a.rec.oks),
                       popcount(kept), self.quorum),
                    recs + faults))
                return
        self.violation("overlap", msg, recs)

    # ---- use lines ------------------------------------------------------------

    def check_uses(self, by_res):
        for u in self.recs:
            if u.op != "use":
                continue
            if u.late:
                self.late_ops += 1
            for iv in by_res.get(u.res, []):
                if iv.holder.token == u.token:
                    continue
                if u.invoke < iv.end and iv.start < u.complete:
                    msg = ("%s acted as holder of %r (token %s, %s) over [%s, %s] while %s "
                           "(token %s, %s) held it [%s, %s)"
                           % (u.client, u.res, short(u.token), u.where(), self.t(u.invoke),
                              self.t(u.complete), iv.rec.client, short(iv.holder.token),
                              iv.rec.where(), self.t(iv.start), self.t(iv.end)))
                    if u.late:
                        self.infos.append("late (marked by its client, not a violation): " + msg)
                    else:
                        self.violation("use", msg, [u, iv.rec])
                    break

    # ---- (b) fencing ----------------------------------------------------------

    def check_fences(self):
        grants = [r for r in self.recs if r.op == "acquire" and r.rc == 0]
        self.fences_skipped = all(r.fence == 0 for r in grants)
        if self.fences_skipped:
            return
        by_res = {}
        for r in grants:
            by_res.setdefault(r.res, []).append(r)
        for res, rs in by_res.items():
            # Walk grants by invoke time, folding in every grant that had
            # completed before it was invoked: the largest fence among those
            # is what it must exceed.
            done = sorted((r for r in rs if r.fence), key=lambda r: r.complete)
            best = None
            k = 0
            for r in sorted((r for r in rs if r.fence), key=lambda r: (r.invoke, r.complete)):
                while k < len(done) and done[k].complete < r.invoke:
                    if best is None or done[k].fence > best.fence:
                        best = done[k]
                    k += 1
                if best is not None and r.fence <= best.fence:
                    self.violation("fence", "fence of %r did not increase: %s got %d (%s, invoked "
                                   "%s) after %s got %d (%s, done %s)"
                                   % (res, r.client, r.fence, r.where(), self.t(r.invoke),
                                      best.client, best.fence, best.where(), self.t(best.complete)),
                                   [best, r])

    # ---- (c) releases after the lease ended -------------------------------------

    def check_releases(self, by_res):
        for r, own_end in self.releases:
            if r.rc != 0:
                continue
            if own_end is not None and r.invoke < own_end:
                continue
            for iv in by_res.get(r.res, []):
                if iv.holder.token == r.token:
                    continue
                if r.invoke < iv.end and iv.start < r.complete:
                    ended = ("its window ended at %s" % self.t(own_end)) if own_end is not None \
                        else "it held no window"
                    self.violation("release", "review: %s released %r (token %s, %s) at %s after "
                                   "%s, got 0, while %s (token %s, %s) held it [%s, %s): it may "
                                   "have removed that lock"
                                   % (r.client, r.res, short(r.token), r.where(), self.t(r.invoke),
                                      ended, iv.rec.client, short(iv.holder.token),
                                      iv.rec.where(), self.t(iv.start), self.t(iv.end)),
                                   [r, iv.rec])
                    break

    # ---- (d) keys left on masters -------------------------------------------------

    def check_keys(self):
        keys = [r for r in self.recs if r.op == "key"]
        self.n_keys = len(keys)
        if not keys:
            return
        known = {}
        ttl = {}
        failed = {}   # res -> the acquire with a failed attempt whose bound ends last
        for r in self.recs:
            if r.op in ("acquire", "extend") and r.res is not None:
                ttl[r.res] = max(ttl.get(r.res, 0), r.ttl)
            if r.op in ("acquire", "extend") and r.rc == 0:
                known.setdefault((r.res, r.token), r)
            if r.op == "acquire" and (r.rc != 0 or r.attempts > 1):
                # a failed attempt SET its key before the acquire
                # completed: it lapses by complete + ttl
                f = failed.get(r.res)
                if f is None or r.complete + r.ttl * 1000 > f.complete + f.ttl * 1000:
                    failed[r.res] = r
        grace = self.opts.grace_ms * 1000
        for k in keys:
            where = "master %s holds %r = %s with pttl %d ms" % (k.master, k.res, short(k.token), k.pttl)
            if k.pttl == -1:
                self.violation("key", where + ": no ttl, it never frees", [k])
                continue
            if k.pttl < 0:
                continue   # -2: gone by the time PTTL ran
            if k.token and k.token.startswith("\x01"):
                hand = k.token[1:].split("|", 1)[0]
                if not hand.isdigit():
                    self.violation("key", where + ": a reservation without a hand window", [k])
                elif k.pttl > int(hand):
                    self.violation("key", where + ": a reservation outliving its hand window "
                                   "(%s ms)" % hand, [k])
                continue
            maxttl = ttl.get(k.res, 0)
            if maxttl and k.pttl > maxttl:
                self.violation("key", where + ": above the longest ttl used (%d ms)" % maxttl, [k])
                continue
            if (k.res, k.token) in known:
                continue
            expiry = k.complete + k.pttl * 1000
            f = failed.get(k.res)
            if f is None:
                self.violation("key", where + ": no successful operation returned this token and "
                               "no attempt to acquire this resource failed", [k])
                continue
            limit = f.complete + f.ttl * 1000 + grace
            if expiry > limit:
                self.violation("key", where + ": left by a failed acquire attempt, yet expires at "
                               "%s, %.1f ms after the last acquire with one (%s, done %s) plus "
                               "its ttl" % (self.t(expiry), (expiry - limit + grace) / 1000.0,
                                            f.where(), self.t(f.complete)), [k, f])

    # ---- output --------------------------------------------------------------------

    def window(self, recs, out):
        ctx = self.opts.context
        by_file = {}
        for r in recs:
            by_file.setdefault(r.fname, set()).add(r.lineno)
        for fname, marks in by_file.items():
            text = self.lines.get(fname, [])
            ranges = []
            for n in sorted(marks):
                lo, hi = max(1, n - ctx), min(len(text), n + ctx)
                if ranges and lo <= ranges[-1][1] + 1:
                    ranges[-1][1] = max(ranges[-1][1], hi)
                else:
                    ranges.append([lo, hi])
            for lo, hi in ranges:
                out.write("  %s lines %d..%d:\n" % (fname, lo, hi))
                for n in range(lo, hi + 1):
                    out.write("  %s%6d  %s\n" % (">>" if n in marks else "  ", n, text[n - 1]))

    def run(self, out):
        self.build()
        by_res = self.intervals()
        self.check_overlaps(by_res)
        self.check_uses(by_res)
        self.check_fences()
        self.check_releases(by_res)
        self.check_keys()
        for i, (kind, msg, recs) in enumerate(self.violations, 1):
            out.write("VIOLATION %d (%s): %s\n" % (i, kind, msg))
            self.window(recs, out)
        for kind, msg, recs in self.explained:
            out.write("EXPLAINED (%s): %s\n" % (kind, msg))
            self.window(recs, out)
        for msg in self.infos:
            out.write("NOTE: %s\n" % msg)
        n_ops = sum(1 for r in self.recs if r.op in LOCK_OPS)
        extra = []
        if self.late_ops:
            extra.append("%s marked late by their clients" % plural(self.late_ops, "op"))
        if self.explained:
            extra.append("%s explained by lost keys" % plural(len(self.explained), "overlap"))
        if self.n_keys:
            extra.append("%s in the snapshot" % plural(self.n_keys, "key"))
        if self.fences_skipped:
            extra.append("fences all 0: not checked")
        out.write("checked %s, %s, %s%s\n"
                  % (plural(n_ops, "op"), plural(len(self.holders), "holder"),
                     plural(len(self.violations), "violation"),
                     "; " + ", ".join(extra) if extra else ""))
        return 1 if self.violations else 0


def main(argv):
    ap = argparse.ArgumentParser(
        prog="check.py",
        description="Check a redlock test history for overlapping holders, fences out of "
                    "order, releases of someone else's lock and keys left behind.")
    ap.add_argument("history", nargs="+", help="history files (JSON lines)")
    ap.add_argument("--snapshot", action="append", default=[],
                    help="keys seen on the masters at the end (\"key\" lines); repeatable")
    ap.add_argument("--masters", type=int, default=5, help="N, for the quorum N/2+1 (default 5)")
    ap.add_argument("--context", type=int, default=10,
                    help="history lines shown before and after each line involved (default 10)")
    ap.add_argument("--grace-ms", type=int, default=50,
                    help="slack on a leftover key's expiry (default 50)")
    ap.add_argument("--explain-lost-keys", action="store_true",
                    help="do not count overlaps that a recorded loss of keys explains")
    opts = ap.parse_args(argv)
    if opts.masters < 1:
        ap.error("--masters must be at least 1")
    try:
        recs, lines = load(opts.history + opts.snapshot)
        return Checker(recs, lines, opts).run(sys.stdout)
    except BadInput as e:
        sys.stdout.write("check.py: %s\n" % e)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
