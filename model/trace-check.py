#!/usr/bin/env python3
"""trace-check.py - replay the library's own traces against the model's rules.

A trace is what REDLOCK_TRACE=FILE makes the library write (redlock/transport/trace.c
says the format): every client, of every process that shares FILE, appends
one line per protocol step. This replays each step against the transitions
of model/redlock.pml as a client sees them, and fails, naming the line, on
any step the model cannot take:

  vote      an OK counts only from a master whose CHECK succeeded on the
            connection the OK came on (CONN .. CHECKED .. REP), and only if
            the reply itself says the master counted (the script's {1,..};
            the fast path's `served`; a plain SET only with the guard off);
            a majority needs `quorum` distinct masters
  quorum    a majority reached more than RL_QUORUM_MAX_MS (500 ms) after its
            attempt's start is never granted (guard on)
  validity  validity <= ttl - (decision - attempt start) - margin, margin =
            ceil(ttl * drift) + 2 ms (drift/drift.c, in µs)
  settle    a SETTLE names a birth this client saw pending on that master,
            follows a LEASES round begun after that pending answer, that
            round no earlier than the settle wait after the rebirth
            (memory.c settle_wait_us, from the client's estimate `born`);
            its window covers what was reported (tight: every master
            answered, fewer than a quorum do not count, window >= longest +
            2 ceil(longest drift) + 2; else >= the longest maxttl), its fence
            >= every fence reported
  reborn    (--complete: the file holds every client of those masters) a
            master seen pending with birth b and then seen counting with
            birth b needs, in between, a SETTLE naming b sent long enough
            before (window / (1 + drift), 2 ms of Redis' clock granularity)
            or a DECLARE of that master, by some client of the file, or an
            operator's declaration the test wrote (OPER); a master is its
            index in the list, which every client of a file shares
  token     a release or extend names a token granted in this file (to this
            client, or to a client that handed it over: redlock-cli); a
            pass (an acquire or pass request with prev=) names one too
  fence     successive fenced grants of one resource, the earlier released
            or expired before the later attempt began, or passed on by it
            (the later attempt's prev= names it: the holder let go when
            the pass began, docs/waiting.md), strictly increase,
            unless a majority of masters was seen reborn in between (no
            master left may hold the last fence: not claimed,
            docs/waiting.md, "Fencing tokens")

Usage: trace-check.py [--complete] FILE...   exit 0 clean, 1 violations (or a
FILE missing, empty, or without one decided operation), 2 usage.
       trace-check.py --self-test              synthetic traces, clean and
broken, each broken one must fail.

Mutated libraries it catches (run by hand, 2026-12-07; see the report of
issue 33 item 4): in redlock/base/script.c's SETTLE drop `m[1] ~= ARGV[1] or`,
build, and `meson test -C build attack-stale`: the trace check fails on
"attack-stale.trace:671: reborn: master 2 counts with birth 8f68.., pending
at line 494, but the only SETTLE naming it (line 620, window 9208 ms) was
sent 83.8 ms before" (the test fails too); in redlock/kinds/acquire.c acq_succeed
compute `elapsed` as `rl_now_us() - now` (validity from the decision) and
`meson test -C build queue`: "queue.trace:49: validity: acquire granted 9898
ms of validity; the attempt began 0.815 ms before (line 39), so at most
9897.185 ms (ttl 10000 - elapsed - margin 102.000)" (the test alone passes).
"""
import math
import sys

QUORUM_MAX_US = 500 * 1000  # redlock/base/common.h RL_QUORUM_MAX_MS


def unesc(s):
    out, i = bytearray(), 0
    b = s.encode()
    while i < len(b):
        if b[i] == 0x25 and i + 2 < len(b):
            out.append(int(b[i + 1:i + 3], 16))
            i += 3
        else:
            out.append(b[i])
            i += 1
    return out.decode("utf-8", "replace")


def parse_raw(s):
    """The compact reply form: ints, s:str, nil, +status, !ERR, [a,b]."""
    pos = 0

    def item():
        nonlocal pos
        if s.startswith("[", pos):
            pos += 1
            v = []
            while pos < len(s) and s[pos] != "]":
                v.append(item())
                if pos < len(s) and s[pos] == ",":
                    pos += 1
            pos += 1
            return v
        end = pos
        while end < len(s) and s[end] not in ",]":
            end += 1
        tok, pos = s[pos:end], end
        if tok == "nil":
            return None
        if tok.startswith("s:"):
            return ("s", unesc(tok[2:]))
        if tok.startswith("+") or tok.startswith("!"):
            return (tok[0], tok[1:])
        try:
            return int(tok)
        except ValueError:
            return ("?", tok)

    return item()


class Line:
    __slots__ = ("no", "t", "client", "ev", "f")

    def __init__(self, no, t, client, ev, f):
        self.no, self.t, self.client, self.ev, self.f = no, t, client, ev, f

    def i(self, k, default=0):
        v = self.f.get(k, "")
        try:
            return int(v)
        except ValueError:
            return default


def read(path):
    lines = []
    with open(path, encoding="utf-8", errors="replace") as fh:
        for no, text in enumerate(fh, 1):
            parts = text.rstrip("\n").split(" ")
            if len(parts) < 4 or not parts[0].isdigit():
                continue
            f = {}
            for p in parts[4:]:
                if "=" in p:
                    k, v = p.split("=", 1)
                    f[k] = v
            if parts[3] == "REP" and "raw=" in text:
                f["raw"] = text.split("raw=", 1)[1].rstrip("\n")
            lines.append(Line(no, int(parts[0]), parts[1] + "/" + parts[2], parts[3], f))
    return lines


class Client:
    def __init__(self, hello):
        self.n = hello.i("n")
        self.quorum = hello.i("quorum")
        self.drift = float(hello.f.get("drift", "0.01"))
        self.guard = hello.f.get("guard") == "1"
        self.checked = {}  # master -> CHECK accepted on its current connection
        self.conn_line = {}  # master -> line of its current connection's CONN
        self.ops = {}  # op -> attempt state
        self.pending = []  # MARK pending: (line, master, birth, born)
        self.rounds = {}  # LEASES fanout id -> {start, reports}
        self.granted = set()


def served(kind, raw, guard):
    """Does this reply say the master counted when it granted?"""
    if kind in ("acquire", "pass"):  # pass: the script read `served` itself
        return isinstance(raw, list) and raw[:1] == [1]
    if kind == "extend":
        return raw == 1
    if kind == "fast":
        return (isinstance(raw, list) and len(raw) >= 2 and isinstance(raw[0], list)
                and len(raw[0]) >= 1 and isinstance(raw[0][0], tuple) and raw[0][0][0] == "s")
    if kind == "set":
        return not guard and raw == ("+", "OK")
    return False


def check(path, complete):
    lines = read(path)
    errs = []

    def bad(line, rule, msg):
        errs.append("%s:%d: %s: %s" % (path, line.no, rule, msg))

    clients = {}
    grants_any = {}  # token -> client
    fenced = {}  # key -> last fenced grant {fence, tok, t, validity, released}
    released = {}  # (key, tok) -> line of a release decision
    seen_pending = {}  # birth -> first MARK pending line
    settles = {}  # birth -> [(line, t, window)]
    declares = []  # lines of DECLARE requests
    reborn = []  # (line, master) of every pending answer: a master that forgot
    drift_max = 0.0
    decided = 0
    for ln in lines:
        if ln.ev == "HELLO":
            clients[ln.client] = Client(ln)
            drift_max = max(drift_max, clients[ln.client].drift)
            continue
        if ln.ev == "OPER":
            declares.append((ln.no, ln.i("m", -1)))  # the test as operator (helpers/cluster.c)
            continue
        c = clients.get(ln.client)
        if c is None:
            bad(ln, "format", "a line of client %s before its HELLO" % ln.client)
            continue
        ev, f = ln.ev, ln.f
        m = ln.i("m", -1)
        if ev == "CONN":
            c.checked[m] = False
            c.conn_line[m] = ln.no
        elif ev == "CHECKED":
            c.checked[m] = True
        elif ev == "MARK":
            birth = unesc(f.get("birth", ""))
            if f.get("state") == "pending" and birth:
                c.pending.append((ln, m, birth, ln.i("born")))
                reborn.append((ln.no, m))
                # a DECLARE sent since the connection opened may have run
                # after the request that found it pending: from there on
                seen_pending.setdefault(birth, (ln, c.conn_line.get(m, 0)))
            elif f.get("state") == "counts" and birth and complete and birth in seen_pending:
                check_reborn(ln, birth, seen_pending[birth], settles.get(birth, []),
                             declares, drift_max, bad)
        elif ev == "ATT":
            c.ops[ln.i("op")] = {"kind": f.get("kind"), "att": ln, "reps": {}, "quorum": None}
        elif ev == "REQ":
            kind = f.get("kind")
            op = c.ops.get(ln.i("op"))
            if kind == "leases" and ln.i("op") == 0:
                c.rounds.setdefault(ln.i("f"), {"start": ln, "reports": {}})
            elif kind == "settle":
                check_settle(ln, c, bad)
                settles.setdefault(unesc(f.get("birth", "")), []).append(
                    (ln.no, ln.t, ln.i("window")))
            elif kind == "declare":
                declares.append((ln.no, m))
            elif kind in ("acquire", "pass") and op and f.get("prev"):
                # A pass: the holder it takes over from let go when it began.
                op["prev"] = f["prev"]
                # As for a release: a lock may come from another client of
                # the file (redlock_lock_new(), a token handed over).
                if f["prev"] not in c.granted and f["prev"] not in grants_any:
                    bad(ln, "token", "a pass from token %s, which no client of this trace was "
                        "granted" % f["prev"])
            elif kind in ("release", "release-native", "extend") and op and \
                    op["kind"] in ("release", "extend"):
                tok = f.get("tok", "")
                if tok not in c.granted and tok not in grants_any:
                    bad(ln, "token", "%s with token %s, which no client of this trace was granted"
                        % (kind, tok))
        elif ev == "REP":
            if f.get("late") == "1":
                continue
            raw = parse_raw(f.get("raw", "-"))
            op = c.ops.get(ln.i("op"))
            if f.get("kind") == "leases" and ln.i("f") in c.rounds:
                c.rounds[ln.i("f")]["reports"][m] = (ln, raw)
            elif op is not None:
                op["reps"][m] = (ln, f.get("kind"), raw, c.checked.get(m, False))
        elif ev == "QUORUM":
            op = c.ops.get(ln.i("op"))
            if op is None:
                bad(ln, "format", "QUORUM of an op with no attempt")
                continue
            op["quorum"] = ln
            elapsed = ln.t - op["att"].t
            if f.get("late") == "0" and c.guard and elapsed > QUORUM_MAX_US:
                bad(ln, "quorum", "majority taken %.1f ms after the attempt's start (line %d), "
                    "past RL_QUORUM_MAX_MS = 500" % (elapsed / 1000, op["att"].no))
            check_votes(ln, c, op, bad)
        elif ev == "DEC":
            decided += 1
            check_decision(ln, c, grants_any, fenced, released, reborn, bad)
    if not clients:
        errs.append("%s: no trace: not one client wrote a HELLO (an empty trace proves nothing)"
                    % path)
    elif decided == 0:
        errs.append("%s: no operation was decided in the trace" % path)
    return lines, clients, errs


def check_votes(ln, c, op, bad):
    ok = [int(x) for x in ln.f.get("ok", "").split(",") if x]
    if len(set(ok)) < c.quorum:
        bad(ln, "vote", "majority of %d masters (%s), quorum is %d" % (len(set(ok)), ok, c.quorum))
    for m in ok:
        rep = op["reps"].get(m)
        if rep is None:
            bad(ln, "vote", "master %d counted with no reply to this attempt (line %d)"
                % (m, op["att"].no))
            continue
        rl, kind, raw, checked = rep
        if c.guard and not checked:
            bad(ln, "vote", "master %d counted, but its reply (line %d) came on a connection "
                "whose CHECK had not succeeded" % (m, rl.no))
        if op["kind"] in ("acquire", "extend") and not served(kind, raw, c.guard):
            bad(ln, "vote", "master %d counted, but its reply (line %d, %s: %s) does not say "
                "it counted" % (m, rl.no, kind, rl.f.get("raw")))


def margin_us(ttl, drift):
    return max(math.ceil(ttl * 1000.0 * drift), 0) + 2000


def check_decision(ln, c, grants_any, fenced, released, reborn, bad):
    f = ln.f
    kind, status = f.get("kind"), ln.i("status", -1)
    op = c.ops.get(ln.i("op"))
    tok, key = f.get("tok", ""), f.get("key", "")
    if kind == "release":
        released[(key, tok)] = ln.no
        return
    if kind not in ("acquire", "extend") or status != 0 or op is None:
        return
    att = op["att"]
    ttl, validity = ln.i("ttl"), ln.i("validity")
    elapsed = ln.t - att.t
    most = ttl * 1000 - elapsed - margin_us(ttl, c.drift)
    if validity * 1000 > most:
        bad(ln, "validity", "%s granted %d ms of validity; the attempt began %.3f ms before "
            "(line %d), so at most %.3f ms (ttl %d - elapsed - margin %.3f)"
            % (kind, validity, elapsed / 1000, att.no, most / 1000, ttl,
               margin_us(ttl, c.drift) / 1000))
    q = op["quorum"]
    if c.guard and (q is None or q.no < att.no or q.f.get("late") != "0"):
        bad(ln, "quorum", "%s granted without a majority in time for this attempt (line %d)"
            % (kind, att.no))
    if kind == "extend":
        return
    c.granted.add(tok)
    grants_any[tok] = ln.client
    fence = ln.i("fence")
    if fence:
        prev = fenced.get(key)
        if prev:
            gone = released.get((key, prev["tok"]), 1 << 60) < att.no or \
                prev["t"] + prev["validity"] * 1000 < att.t or op.get("prev") == prev["tok"]
            # Fences are not claimed once a majority forgot between the
            # two grants (docs: "Not claimed"): no master left may hold
            # the last fence for a settle to raise the counters to.
            forgot = {m for no, m in reborn if prev["line"] < no < att.no}
            if gone and fence <= prev["fence"] and len(forgot) < c.quorum:
                bad(ln, "fence", "fence %d for %s after fence %d (line %d), which ended before "
                    "this attempt began" % (fence, unesc(key), prev["fence"], prev["line"]))
        fenced[key] = {"fence": fence, "tok": tok, "t": ln.t, "validity": validity,
                       "line": ln.no}


def settle_wait_us(d):
    return math.ceil(QUORUM_MAX_US * (1.0 + d) / (1.0 - d)) + 1000


def check_settle(ln, c, bad):
    m, birth = ln.i("m", -1), unesc(ln.f.get("birth", ""))
    seen = [p for p in c.pending if p[1] == m and p[2] == birth]
    if not seen:
        bad(ln, "settle", "SETTLE of master %d names birth %s, which this client never saw "
            "pending there" % (m, birth or "''"))
        return
    first = seen[0][0].no
    rounds = [r for r in c.rounds.values() if first < r["start"].no < ln.no]
    if not rounds:
        bad(ln, "settle", "SETTLE of master %d (birth %s) without a LEASES round begun after "
            "the pending answer (line %d)" % (m, birth, first))
        return
    r = max(rounds, key=lambda r: r["start"].no)
    start = r["start"]
    d, wait = c.drift, settle_wait_us(c.drift)
    ripe = min(p[0].t + max(0.0, wait - (p[0].t - p[3]) * (1 - d) / (1 + d))
               for p in seen if p[0].no < start.no)
    if start.t + 2 < ripe:
        bad(ln, "settle", "the LEASES round (line %d) for master %d began %.3f ms before the "
            "settle wait (%.3f ms after the rebirth) ended" % (start.no, m,
                                                                (ripe - start.t) / 1000,
                                                                wait / 1000))
    answered, counting, longest, maxttl, fence = 0, 0, 0, 0, 0
    for rm, (rl, raw) in r["reports"].items():
        if rl.no > ln.no or not isinstance(raw, list) or len(raw) < 4:
            continue
        if not all(isinstance(x, int) for x in raw[:3]) or raw[0] not in (0, 1):
            continue
        answered += 1
        counting += raw[0]
        longest, maxttl = max(longest, raw[1]), max(maxttl, raw[2])
        if isinstance(raw[3], tuple) and raw[3][1].isdigit():
            fence = max(fence, int(raw[3][1]))
    window, tight = ln.i("window"), ln.f.get("tight") == "1"
    if tight:
        need = longest + 2 * math.ceil(longest * d) + 2
        if answered < c.n or counting + c.quorum <= c.n:
            bad(ln, "settle", "a tight window for master %d, but %d of %d masters answered "
                "the LEASES round (line %d), %d counting" % (m, answered, c.n, start.no,
                                                             counting))
        elif window < need:
            bad(ln, "settle", "window %d ms for master %d, below the longest lease reported "
                "(%d ms) + 2 x drift + 2 = %d" % (window, m, longest, need))
    elif window < maxttl:
        bad(ln, "settle", "window %d ms for master %d, below the fleet's bound %d ms reported"
            % (window, m, maxttl))
    if ln.i("fence") < fence:
        bad(ln, "settle", "fence %d, below the %d the fleet reported" % (ln.i("fence"), fence))


def check_reborn(ln, birth, seen, settles, declares, d, bad):
    pend, since = seen
    for s_no, s_t, window in settles:
        if pend.no < s_no < ln.no and ln.t - s_t >= window * 1000 / (1 + d) - 2000:
            return
    if any(since < x < ln.no and dm == ln.i("m", -1) for x, dm in declares):
        return
    named = [s for s in settles if pend.no < s[0] < ln.no]
    if named:
        s_no, s_t, window = max(named, key=lambda s: s[0])
        why = "the only SETTLE naming it (line %d, window %d ms) was sent %.1f ms before" % (
            s_no, window, (ln.t - s_t) / 1000)
    else:
        why = "no SETTLE or DECLARE named it"
    bad(ln, "reborn", "master %s counts with birth %s, pending at line %d, but %s"
        % (ln.f.get("m"), birth, pend.no, why))


# ---- self-test --------------------------------------------------------------------------

HELLO = "n=3 quorum=2 drift=0.010000 guard=1 masters=a,b,c prefix="


def synth(steps):
    """Lines from (t_ms, client, EV, fields) steps."""
    return "".join("%d 1 %s %s %s\n" % (int(t * 1000), cl, ev, fs) for t, cl, ev, fs in steps)


def base(settle_ms=520, window=20, served_ms=580, validity=9897, grant_ms=0.5):
    s = [(0, "A", "HELLO", HELLO)]
    for m in range(3):
        s += [(0, "A", "CONN", "m=%d" % m), (0.1, "A", "CHECKED", "m=%d" % m),
              (0.1, "A", "MARK", "m=%d state=counts birth= age=5 window=0 maxttl=0 born=1" % m)]
    s += [(1, "A", "ATT", "op=1 kind=acquire key=r")]
    for m in range(3):
        s += [(1, "A", "REQ", "m=%d op=1 f=1 kind=acquire key=r tok=t1 ttl=10000" % m)]
    s += [(1 + grant_ms, "A", "REP", "m=%d op=1 f=1 kind=acquire late=0 raw=[1,0,10000]" % m)
          for m in range(2)]
    s += [(1 + grant_ms, "A", "QUORUM", "op=1 late=0 ok=0,1"),
          (1 + grant_ms, "A", "DEC", "op=1 kind=acquire status=0 ok=0,1 validity=%d fence=0 "
           "tok=t1 ttl=10000 key=r" % validity),
          (2, "A", "ATT", "op=2 kind=release key=r"),
          (2, "A", "REQ", "m=0 op=2 f=2 kind=release key=r tok=t1"),
          (3, "A", "DEC", "op=2 kind=release status=0 ok=0,1 validity=0 fence=0 tok=t1 "
           "ttl=10000 key=r"),
          # master 2 reborn: pending, measured, settled, counting
          (5, "A", "MARK", "m=2 state=pending birth=b1 age=0 window=0 maxttl=0 born=5000")]
    s += [(settle_ms - 1, "A", "REQ", "m=%d op=0 f=3 kind=leases " % m) for m in range(3)]
    s += [(settle_ms - 0.5, "A", "REP", "m=%d op=0 f=3 kind=leases late=0 raw=[1,5,10000,s:0]"
           % m) for m in range(2)]
    s += [(settle_ms - 0.5, "A", "REP", "m=2 op=0 f=3 kind=leases late=0 raw=[0,0,10000,s:0,,3]"),
          (settle_ms, "A", "REQ", "m=2 op=0 f=4 kind=settle birth=b1 window=%d tight=1 fence=0"
           % window),
          (served_ms, "A", "MARK", "m=2 state=counts birth=b1 age=5 window=0 maxttl=0 born=1")]
    return s


def fenced_first(released=True):
    """base(), its grant fenced 5; without its release when not @released."""
    return [x if x[2] != "DEC" or "op=1 " not in x[3] else
            (x[0], x[1], x[2], x[3].replace("fence=0", "fence=5"))
            for x in base() if released or "op=2 " not in x[3]]


def second_grant(fence, kind="acquire", prev=None):
    """Op 3 at 600 ms: an acquire (or a pass from token @prev) granted by
    masters 0 and 1 with @fence."""
    s = [(600, "A", "ATT", "op=3 kind=acquire key=r")]
    if prev:
        s += [(600, "A", "REQ", "m=%d op=3 f=5 kind=%s key=r tok=t2 ttl=10000 prev=%s"
               % (m, kind, prev)) for m in range(3)]
    s += [(600.5, "A", "REP", "m=%d op=3 f=5 kind=%s late=0 raw=[1,0,10000]" % (m, kind))
          for m in range(2)]
    return s + [(600.5, "A", "QUORUM", "op=3 late=0 ok=0,1"),
                (600.5, "A", "DEC", "op=3 kind=acquire status=0 ok=0,1 validity=9897 fence=%d "
                 "tok=t2 ttl=10000 key=r" % fence)]


def fenced_again(fence, forgot=()):
    """A second grant with @fence after the first's release, masters
    @forgot seen reborn in between."""
    s = fenced_first()
    s += [(590, "A", "MARK", "m=%d state=pending birth=f%d age=0 window=0 maxttl=0 born=590000"
           % (m, m)) for m in forgot]
    return s + second_grant(fence)


def passed(fence, prev="t1"):
    """The first grant not released but passed: a pass from token @prev
    granted with @fence."""
    return fenced_first(released=False) + second_grant(fence, "pass", prev)


def self_test():
    import os
    import tempfile

    cases = [
        ("clean", base(), None),
        ("validity from the decision", base(validity=9898, grant_ms=30), "validity"),
        ("a quorum past 500 ms", base(grant_ms=600, validity=9297), "quorum"),
        ("a settle before the wait", base(settle_ms=300, served_ms=400), "settle"),
        ("a window without the drift term", base(window=7), "settle"),
        ("counting before the window ran", base(window=400, served_ms=530), "reborn"),
    ]
    unchecked = base()
    unchecked.insert(unchecked.index((0.1, "A", "CHECKED", "m=1")), (0.1, "A", "CONN", "m=1"))
    unchecked.remove((0.1, "A", "CHECKED", "m=1"))
    cases.append(("an OK on an unchecked connection", unchecked, "vote"))
    stale = [x if x[2] != "REQ" or "settle" not in x[3] else
             (x[0], x[1], x[2], x[3].replace("birth=b1", "birth=b0")) for x in base()]
    cases.append(("a settle naming another birth", stale, "settle"))
    fast = [x if "raw=[1,0,10000]" not in x[3] or "m=1" not in x[3] else
            (x[0], x[1], x[2], x[3].replace("kind=acquire", "kind=fast")
             .replace("raw=[1,0,10000]", "raw=[[nil,nil],nil,0,1]")) for x in base()]
    cases.append(("a fast vote without served", fast, "vote"))
    cases.append(("a fence that went back", fenced_again(5), "fence"))
    cases.append(("a fence back after a majority forgot", fenced_again(3, (0, 1)), None))
    cases.append(("a pass with a higher fence", passed(6), None))
    cases.append(("a pass whose fence went back", passed(5), "fence"))
    cases.append(("a pass from a token never granted", passed(6, prev="tx"), "token"))
    failed = 0
    with tempfile.TemporaryDirectory() as d:
        for name, steps, rule in cases:
            p = os.path.join(d, "t")
            with open(p, "w") as fh:
                fh.write(synth(steps))
            _, _, errs = check(p, True)
            hit = [e for e in errs if rule and (": %s: " % rule) in e]
            good = not errs if rule is None else bool(hit)
            print("%s %s%s" % ("ok  " if good else "FAIL", name,
                               "" if good else ": " + ("; ".join(errs) or "not caught")))
            failed += not good
        p = os.path.join(d, "empty")
        open(p, "w").close()
        _, _, errs = check(p, True)
        print("%s an empty trace fails" % ("ok  " if errs else "FAIL"))
        failed += not errs
    return 1 if failed else 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    complete = "--complete" in argv[1:]
    files = [a for a in argv[1:] if a != "--complete"]
    if not files or any(a.startswith("-") for a in files):
        print(__doc__.split("\n\n")[-3], file=sys.stderr)
        return 2
    status = 0
    for path in files:
        try:
            lines, clients, errs = check(path, complete)
        except OSError as e:
            print("%s: %s (no trace: an empty trace proves nothing)" % (path, e.strerror))
            status = 1
            continue
        for e in errs[:20]:
            print(e)
        if len(errs) > 20:
            print("%s: ... and %d more" % (path, len(errs) - 20))
        print("%s: %d lines, %d clients: %s" % (path, len(lines), len(clients),
                                                 "%d steps the model cannot take" % len(errs)
                                                 if errs else "every step is the model's"))
        status |= 1 if errs else 0
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
