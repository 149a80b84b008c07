/* redlock.pml - redlock's protocol as SPIN sees it (docs: docs/model.md).
 *
 * Masters run each script atomically: the lock key of ONE resource (free,
 * a client's token, that token marked by a waiter's join, or a reservation
 * for a waiter), the master's fence counter, the queue of waiters, the
 * memory marker (its state, the process that wrote it, the rebirth it
 * names, the fleet's bound) and the index of live leases. Clients talk to
 * masters over one FIFO channel per (client, master) connection; the
 * single "net" process delivers any non-empty channel's head at any time
 * (delay, and reordering across connections), and a fault may drop a
 * connection (loss). A FLUSHALL keeps connections: what was sent before it
 * is delivered after it (a request delayed past a rebirth).
 *
 * Time is discrete: the clock process ticks. A tick counts down every
 * master's key ttl, window and index entries, and every client's validity.
 * A master's clock may run fast: a key (or a window) may end up to D ticks
 * early. A client's validity is TTL - MARGIN ticks from the start of its
 * attempt, so with MARGIN = D no key it counted can expire while it
 * believes it holds.
 *
 * Two configurations, chosen with -D:
 *   (default)  safety: faults, free ticks, bounded rounds; asserts mutual
 *              exclusion and (FENCED) the fence order.
 *   LIVE       liveness once faults stop: the last master down, no other
 *              fault, two clients wanting the lock again and again, under
 *              bounded delay (below). Asserts no stuck resource and the
 *              queue's order, and carries the LTL progress property.
 * Faults (FAULTS of them, kinds by FAULT_KIND, docs/model.md): a restart
 * that kept nothing; a restart that loaded a snapshot (of itself: an
 * older RDB, AOF that lost its tail, a promoted replica, a restore from
 * backup, a crash after a run-time persistence switch; of another master:
 * a copy of its data); FLUSHALL (then, maybe, a third party's handshake
 * stamps it at once); a dropped connection; the master's name moving onto
 * a server that counts. OPER adds an operator who runs readmit (1) or
 * declare-empty (2) once, at any moment; UNDECL starts the last master
 * new and undeclared (pending); GHOST, an earlier holder's release that
 * was still on its way runs on every master at any moment; SETTLER, a
 * third party settles and stamps masters; PINGER, client 1 only meets
 * the masters (its settle may be delayed past a rebirth).
 * PASS (issue 31, the local hand-off): client 0 is a process with two
 * local holders, tokens 0 and 2 (TID); a holder that releases may pass
 * instead: the other token's attempt, whose script also takes a key that
 * holds the previous token (ACQ with x = 1), and the bound LRM on passes
 * in a row while client 1 waits (LIVE). TAKER: another client takes the
 * lock at one instant.
 * Known mistakes come back with -DBROKEN_<NAME> (model/check.sh --list-broken).
 */

#ifndef NM
#define NM 3                    /* masters */
#endif
#define NC 2                    /* clients: 0 and 1; OTHER(c) is the other */
#define OTHER(c) (1 - (c))
#define Q (NM / 2 + 1)          /* quorum */
#ifndef TTL
#define TTL 2                   /* a lock key's ttl, ticks */
#endif
#ifndef D
#ifdef LIVE
#define D 0
#else
#define D 1                     /* drift: how early a master may expire */
#endif
#endif
#ifdef BROKEN_NO_DRIFT
#define MARGIN 0
#else
#define MARGIN D                /* validity = TTL - elapsed - MARGIN */
#endif
#define NODE_TO 1               /* an attempt gives up on a silent master after (LIVE) */
#define POLL 1                  /* a failed waiting attempt polls again after */
/* A reservation waits this long for its waiter: a poll and two node
 * timeouts, as acquire-queue.c sizes it (poll + 2 x node timeout + 20 ms),
 * so that a head in the middle of an attempt still finds it. */
#define HAND (POLL + 2 * NODE_TO)
#ifndef ROUNDS0
#define ROUNDS0 1               /* safety: client 0's acquire attempts */
#endif
#ifndef ROUNDS1
#define ROUNDS1 2               /* safety: client 1's acquire attempts */
#endif
#define ROUNDS(c) ((c) == 0 -> ROUNDS0 : ROUNDS1)
#ifndef FAULTS
#define FAULTS 1                /* safety: master faults and lost connections */
#endif
#ifndef EXTS
#define EXTS 0                  /* safety: extends per client */
#endif
#ifndef SETTLES
#define SETTLES 1               /* safety: settle rounds per client */
#endif
#ifndef STUCK_MAX
#define STUCK_MAX 3             /* live: ticks a waiter may see no holder */
#endif
#ifndef CAP
#define CAP 2                   /* requests in flight per connection */
#endif
#ifndef QL
#define QL 1                    /* ticks within which a quorum counts (RL_QUORUM_MAX_MS) */
#endif
#ifndef PASSES
#define PASSES 1                /* PASS, safety: client 0's passes */
#endif
#ifndef LRM
#define LRM 2                   /* PASS, live: local_run_max, the bound B */
#endif

mtype = { ACQ, FAST, CLEAN, REL, NREL, LEAVE, EXT, FENCE, LEASES, SETTLE };

/* Tokens are named by a token id (TID): client c's is c, and with PASS
 * client 0 has a second one, 2, the new holder a pass makes in the same
 * process (a request says which of its client's tokens it is for in y).
 * Reservations are per client (RES): one of client 0's waiters at a time
 * attempts in the model. */
#define FREE 0                  /* key values */
#define TOK(t) ((t) + 1)
#define MTOK(t) ((t) + 4)       /* t's token marked: a waiter joined while t held it */
#define RES(c) ((c) + 8)
#define IS_TOK(k) ((k) >= 1 && (k) < 8)
#define OWN(m, t) (key[m] == TOK(t) || key[m] == MTOK(t))
#ifdef PASS
/* (Sums and products, not `a -> b : c`: SPIN takes no conditional
 * expression as an inline's argument.) */
#define TID(c, y) ((c) + (y))               /* the token a request of c names */
#define PREV(t) (2 - (t))                   /* client 0's other token */
#define ME(c) (me0 * (1 - (c)))             /* the token c's next requests name: 0
                                               or 2 for client 0, always 0 for 1 */
#else
#define TID(c, y) (c)
#define ME(c) 0
#endif

#define MK_NONE 0               /* the memory marker */
#define MK_PENDING 1            /* no window yet: refuses, asks for a settle */
#define MK_YOUNG 2              /* window running: refuses */
#define MK_SERVED 3             /* counts */

#ifdef BROKEN_GUARD_OFF
#define TRUSTED(m) true
#else
#define TRUSTED(m) (mk[m] == MK_SERVED)
#endif
/* The fast path (acquire-command.c): a first attempt, no fence, is a
 * transaction that reads the marker's `served` and `maxttl` in the same
 * step as the SET NX; the vote counts only where it is served and already
 * knows a ttl as long as this one (so that the grant needs no raise). The
 * mistake: trusting what the client last heard of the marker instead. */
#ifdef BROKEN_FAST_UNCHECKED
#define FAST_TRUSTED(m) true
#else
#define FAST_TRUSTED(m) (TRUSTED(m) && bnd[m] >= TTL)
#endif
/* The acquire script reads the marker at the vote: one that vanished
 * (FLUSHALL) is a rebirth there. The mistake: a master counts once its
 * connection's CHECK said so, and the vote does not look again. */
#ifdef BROKEN_CHECK_TRUSTED
#define VANISHED_COUNTS 1
#else
#define VANISHED_COUNTS 0
#endif
#ifdef FENCED
#define FIRST ACQ               /* a fenced acquire never takes the fast path */
#else
#define FIRST FAST
#endif
#ifdef BROKEN_EXTEND_UNTRUSTED
#define EXT_TRUSTED(m) true
#else
#define EXT_TRUSTED(m) TRUSTED(m)
#endif

#define CH(c, m) ((c) * NM + (m))
#if defined(LIVE) || defined(WAITQ)
/* A place renewed (join) or taken away also clears its cut lease (below). */
#define ENQUEUE(m, c) queue[m] = queue[m] | BIT(c); cut[m] = cut[m] & ~BIT(c)
#define DEQUEUE(m, c) queue[m] = queue[m] & ~BIT(c); cut[m] = cut[m] & ~BIT(c)
/* A waiter that joins while a token holds the key marks it (the acquire
 * script's JOIN): the holder's release without Lua then fails its compare
 * and the script hands the key on (NREL). */
#ifdef BROKEN_NATIVE_UNMARKED
#define MARK(m) skip
#else
#define MARK(m) if :: key[m] == TOK(0) -> key[m] = MTOK(0) \
                   :: key[m] == TOK(1) -> key[m] = MTOK(1) \
                   :: key[m] == TOK(2) -> key[m] = MTOK(2) \
                   :: else -> skip fi
#endif
#else
#define ENQUEUE(m, c) skip      /* acquires that do not wait: no queue */
#define DEQUEUE(m, c) skip
#define MARK(m) skip
#endif
#define BIT(i) (1 << (i))
#define ALL (BIT(NM) - 1)

/* ---- masters ---- */
byte key[NM], ttl[NM], fence[NM], queue[NM];
byte cut[NM];                   /* waiters whose lease a reservation cut to its own end */
byte mk[NM];                    /* the marker's state */
byte mkrun[NM];                 /* the process (incarnation) that wrote the marker */
byte gen[NM];                   /* the rebirth the marker names (its `birth`) */
byte ngen[NM];                  /* rebirths so far: the next one's name (not data) */
byte win[NM];                   /* a young marker's window, ticks left */
byte bnd[NM];                   /* the marker's maxttl: the fleet's bound as it heard it */
byte inc[NM];                   /* the process now running as the master */
bool mkdur[NM];                 /* BROKEN_VOUCH_ADOPTS: the marker vouches its process */
bool up[NM];
byte ripe[NM];                  /* ticks pending: at QL, every attempt that counted a vote
                                   it cast before its rebirth has decided */
bool mvd[NM];                   /* its name moved; no client that saw it has reached it yet */
/* The index of held leases ("\0redlock:held"): the clients whose lease
 * has an entry on master m (a bit each). An entry's end is its lease's:
 * what LEASES reports of c's entry is what is left of c's key there (0
 * once it expired, early or not: every key its holder counted has then
 * ended too, so no holder still believes in it). Named by token: a
 * release removes its own lease's entry only. */
byte idx[NM];
/* What master m reports of its live leases, into r: the longest one left,
 * in its own clock's ticks. A master whose clock runs slow says up to D
 * less than is left in real time (its key ends late, but its report is
 * read as if its clock were right): a settle's window takes two drift
 * allowances, this one and the reborn master's own. */
byte rp;                        /* scratch: one master's report (REPORT) */
#ifdef PASS
#define LEFT2(m) if :: LEFT(m, 2) > rp -> rp = LEFT(m, 2) :: else -> skip fi;
#else
#define LEFT2(m)
#endif
#define REPORT(r, m) \
    rp = LEFT(m, 0); if :: LEFT(m, 1) > rp -> rp = LEFT(m, 1) :: else -> skip fi; LEFT2(m) \
    if :: rp > D -> rp = rp - D :: skip fi; \
    if :: rp > r -> r = rp :: else -> skip fi; rp = 0

/* A key that expires ends every entry that could still be reported
 * (LEFT: only its owner's is): the sweep, as LEASES and CHECK make it. */
#ifdef LIVE
#define IDX_ENDED(m) skip
#else
#define IDX_ENDED(m) idx[m] = 0
#endif
#define LEFT(m, t) ((idx[m] & BIT(t)) && OWN(m, t) -> ttl[m] : 0)
bool conn[NC * NM];             /* connection open */
bool fresh[NC * NM];            /* its handshake has not run yet */
bool moved[NC * NM];            /* the client re-resolved the master's name to a new
                                   address: its next handshake (CHECK) makes the
                                   server there reborn, whatever its marker says */
chan ch[NC * NM] = [CAP] of { mtype, byte, byte };
byte old[NC * NM];              /* requests ahead in the channel from rounds that ended */
bool lastold;                   /* the request being run is the last of those (DELIVER) */

/* ---- clients ---- */
byte v[NC], ve[NC];             /* validity left; an extend's, from its start */
bool hold[NC];                  /* the client believes it holds */
bool waiting[NC], woke[NC];
byte tkt[NC];                   /* queue ticket: smaller is earlier */
byte nok[NC], nno[NC], okm[NC], nom[NC], pend[NC], fmax[NC];
byte nrep[NC], nns[NC], rmax[NC], nsm[NC], rfen[NC];
byte pg[NC * NM];               /* the rebirth a master named when c saw it pending */
byte pt[NC];                    /* poll timer */
byte tmo[NC];                   /* ticks since the round started (QL: too late for a quorum) */
byte tk[NC];                    /* ticks since the client began to wait for them */
byte dl[NC];                    /* live: ticks left before the attempt's node timeout */
byte fsnap[NC];                 /* largest granted fence when the attempt started */
byte hi;                        /* largest fence of any completed grant */
byte nf;                        /* faults so far */
byte nt;                        /* ticks so far (TICKS: at most that many) */
bool done1;                     /* SEQ: client 1 is done */
byte stuck;                     /* live: ticks with a waiter and no holder */
byte owed;                      /* live: 1 + the waiter a release must serve next, or 0 */
#ifdef PASS
byte me0;                       /* the token client 0's lock or attempt names: 0 or 2 */
#endif
#ifdef AFTER_PASS
bool passed;                    /* client 0 has passed (client 1 starts then) */
#define AFTER_PASS_SET passed = 1
#else
#define AFTER_PASS_SET skip
#endif

/* The waiter with the earliest ticket in m's queue, or NC. */
inline head_of(m, h) {
    if
    :: (queue[m] & 1) && (!(queue[m] & 2) || tkt[0] < tkt[1]) -> h = 0
    :: (queue[m] & 2) && (!(queue[m] & 1) || tkt[1] < tkt[0]) -> h = 1
    :: else -> h = NC
    fi
}

/* A master is reborn (script-lua.h REBORN): pending, its marker written
 * by this process, naming a new rebirth; the bound @b. */
inline reborn(m, b) {
    mk[m] = MK_PENDING; mkrun[m] = inc[m]; win[m] = 0; mkdur[m] = 0; ripe[m] = 0;
    ngen[m]++; gen[m] = ngen[m]; bnd[m] = b
}

/* The index entry of c's lease on m goes (a release, a cleanup: ZREM by
 * token). The mistake: entries named by the key, so that a late release
 * removes whoever's entry the key has now. */
#ifdef LIVE
#define UNINDEX(m, c) skip
#define INDEX(m, c) skip
#elif defined(BROKEN_INDEX_BY_KEY)
#define UNINDEX(m, c) idx[m] = 0
#define INDEX(m, c) idx[m] = idx[m] | BIT(c)
#else
#define UNINDEX(m, c) idx[m] = idx[m] & ~BIT(c)
#define INDEX(m, c) idx[m] = idx[m] | BIT(c)
#endif

/* A key that is freed goes to the queue's head as a reservation. */
/* A reservation cuts its waiter's lease to the reservation's end (script-
 * lua.h HAND_OVER); the waiter's next attempt renews it. A head whose cut
 * lease is still not renewed when the key is handed again let its
 * reservation lapse: its lease has ended, and it is dropped (a dead waiter
 * is reserved for once). */
/* PASS: a release of a lock that passes over client @o (the release
 * script's ARGV[6]: a lock run of two or more that does not pass) reserves
 * for a live waiter of the other client first, if there is one (its lease
 * not cut), else for the head; @o = NC: the head. */
#ifdef PASS
#define OVER(m, o, h) \
    if :: (o) < NC && (queue[m] & BIT(1 - ((o) & 1))) && !(cut[m] & BIT(1 - ((o) & 1))) -> h = OTHER(o) \
       :: else -> skip fi
#else
#define OVER(m, o, h) skip
#endif
inline hand_over(m, wake, o, h) {
    head_of(m, h);
    do
#ifndef BROKEN_DEAD_HEAD_KEPT
    :: h < NC && (cut[m] & BIT(h)) ->
        DEQUEUE(m, h);
        printf("MSC: master %d drops client %d from its queue: its lease ended\n", m, h);
        head_of(m, h)
#endif
    :: else -> break
    od;
    OVER(m, o, h);
    if
    :: h < NC -> key[m] = RES(h); ttl[m] = HAND; cut[m] = cut[m] | BIT(h);
                 printf("MSC: master %d reserves the key for client %d\n", m, h);
                 if :: wake -> woke[h] = 1 :: else -> skip fi
    :: else -> key[m] = FREE; ttl[m] = 0
    fi;
    h = 0
}

#if defined(LIVE) || defined(WAITQ)
byte lf[NC];                    /* won before these masters answered: leave where they refuse */
/* The winning attempt's answer from a master that had not answered when it
 * won (the last request of the rounds that ended: nothing was sent there
 * since): a refusal left the waiter queued there, and the leave follows
 * (fanout.c's follow-up, acquire-queue.c rl_acq_leave_later), behind
 * whatever the client queued since; a grant dequeued it. */
#define LATE_LEAVE(c, m, ok) \
    if \
    :: lastold && (lf[c] & BIT(m)) -> lf[c] = lf[c] & ~BIT(m); \
       if :: !(ok) && nfull(ch[CH(c, m)]) -> ch[CH(c, m)]!LEAVE, 0, 0 :: else -> skip fi \
    :: else -> skip \
    fi
/* The same answer settles a guess (gq, below): the release goes by what it
 * says, which the master's own fq then holds. */
#define GUESS_SETTLED(c, m) if :: lastold -> gq[c] = gq[c] & ~BIT(m) :: else -> skip fi
#else
#define LATE_LEAVE(c, m, ok) skip
#define GUESS_SETTLED(c, m) skip
#endif
inline vote(c, m, a, ok) {
    if
    :: a && ok -> nok[c]++; okm[c] = okm[c] | BIT(m);
                            if :: fence[m] > fmax[c] -> fmax[c] = fence[m] :: else -> skip fi
    :: a && !ok -> nno[c]++; nom[c] = nom[c] | BIT(m)
    :: else -> GUESS_SETTLED(c, m); /* a late reply: its round is over (fanout detached) */
               LATE_LEAVE(c, m, ok)
    fi
}

/* The master said it does not count: c settles it, naming the rebirth
 * the reply named (memory.c settle_pending). The mistake settle-by-run:
 * the SETTLE names the process (its run_id), which a FLUSHALL keeps. */
#ifdef BROKEN_SETTLE_BY_RUN
#define NAMED(m) mkrun[m]
#else
#define NAMED(m) gen[m]
#endif
inline pending(c, m, a) {
    if :: a -> pend[c] = pend[c] | BIT(m); pg[CH(c, m)] = NAMED(m) :: else -> skip fi
}

/* CHECK's rule on the marker (script.c RL_SCRIPT_MARKER), as any party's
 * handshake applies it: a marker that another process wrote, or none,
 * makes the master reborn. */
inline check_marker(m) {
#ifndef BROKEN_GUARD_OFF
    if
    :: mk[m] == MK_NONE -> reborn(m, TTL)
    :: mk[m] != MK_NONE && mkrun[m] != inc[m] ->
#if defined(BROKEN_TRUST_SNAPSHOT)
        mkrun[m] = inc[m]               /* the bug: the marker as found */
#elif defined(BROKEN_VOUCH_ADOPTS)
        /* main before issue 29: a marker that vouches (AOF always) is
         * adopted by whatever process loaded it */
        if
        :: mkdur[m] -> mkrun[m] = inc[m]
        :: else -> reborn(m, bnd[m])
        fi
#else
        reborn(m, bnd[m])               /* a restart is a rebirth */
#endif
    :: else -> skip
    fi
#else
    skip
#endif
}

/* The handshake, before the connection's first request: CHECK, which also
 * makes the master reborn for a client that reached it at a new address
 * of its name. */
inline handshake(c, m) {
    fresh[CH(c, m)] = 0;
#if !defined(BROKEN_GUARD_OFF) && !defined(BROKEN_MOVE_TRUSTED)
    if
    :: moved[CH(c, m)] ->   /* CHECK's 'moved': reborn, as a restart that kept nothing */
        reborn(m, bnd[m]); mvd[m] = 0;
        printf("MSC: client %d reaches master %d at its new address: reborn\n", c, m)
    :: else -> check_marker(m)
    fi;
#else
    check_marker(m);
#endif
    moved[CH(c, m)] = 0
}

/* PASS: what the pass attempt's script does with the previous token's
 * key (TAKES), and the known mistakes in it. A pass attempt is ACQ with
 * x = 1, y its token; an ordinary one has x = 0. */
#ifdef PASS
#define MARKED(v) ((v) >= MTOK(0) && (v) <= MTOK(2))
#ifdef BROKEN_PASS_NO_COMPARE
/* the takeover overwrites whatever the key holds: another's lease too */
#define TAKES(c, m, x, y) ((x) && key[m] != FREE && key[m] != RES(c))
#else
#define TAKES(c, m, x, y) ((x) && OWN(m, PREV(y)))
#endif
#ifdef BROKEN_PASS_KEEP_TTL
#define PASS_TTL(m) skip        /* KEEPTTL: the previous holder's expiry */
#else
#define PASS_TTL(m) ttl[m] = TTL
#endif
#if defined(FENCED) && !defined(BROKEN_PASS_NO_FENCE)
#define PASS_FENCE(m) fence[m]++
#else
#define PASS_FENCE(m) skip
#endif
#endif
/* LIVE with PASS: a pass's grant says whether the queue holds a live
 * waiter of another client (the reply's bit 2: its lease not cut); the
 * new lock's run grows only if a counted grant said so. */
#if defined(PASS) && defined(LIVE)
bool oth;                       /* the pass attempt heard "another client waits" */
#define OTHERS_WAIT(c, m, a, x) \
    if :: (a) && (x) && (queue[m] & BIT(OTHER(c))) && !(cut[m] & BIT(OTHER(c))) -> oth = 1 \
       :: else -> skip fi
#define REL_OVER(c, x) (NC - (x) * (NC - (c)))   /* x ? c : NC */
#else
#define OTHERS_WAIT(c, m, a, x) skip
#define REL_OVER(c, x) NC
#endif

/* One script on master m, from client c: atomic, as Redis runs it. */
inline exec(c, m, k, a, x, y, h) {
    if
    :: fresh[CH(c, m)] -> handshake(c, m)
    :: else -> skip
    fi;
    if
    :: k == ACQ ->
        /* HEARD: every marked acquire tells the marker its ttl */
        if :: mk[m] != MK_NONE && bnd[m] < TTL -> bnd[m] = TTL :: else -> skip fi;
        if
#ifndef BROKEN_GUARD_OFF
        :: mk[m] == MK_NONE && !VANISHED_COUNTS ->  /* FLUSHALL: stamp, refuse */
            reborn(m, TTL);
            pending(c, m, a); vote(c, m, a, 0)
        :: mk[m] == MK_PENDING || mk[m] == MK_YOUNG ->
            pending(c, m, a); vote(c, m, a, 0)
        :: mk[m] == MK_SERVED || (mk[m] == MK_NONE && VANISHED_COUNTS) ->
#else
        :: true ->
#endif
            if
            :: key[m] == FREE || key[m] == RES(c) ->
                key[m] = TOK(TID(c, y)); ttl[m] = TTL; INDEX(m, TID(c, y));
#ifdef FENCED
                fence[m]++;
#endif
                DEQUEUE(m, c); OTHERS_WAIT(c, m, a, x);
                printf("MSC: master %d grants client %d (fence %d)\n", m, c, fence[m]);
                vote(c, m, a, 1)
#ifdef PASS
            :: TAKES(c, m, x, y) ->
                /* the pass (x): a key that holds the previous token, or it
                 * marked, is free for this attempt; the grant re-SETs it
                 * with a full ttl, keeps the mark, moves the index entry
                 * (ZREM prev, ZADD ours), raises the fence as any fenced
                 * grant and dequeues the waiter */
                printf("MSC: master %d passes the key from token %d to client %d's token %d\n",
                       m, (MARKED(key[m]) -> key[m] - MTOK(0) : key[m] - TOK(0)), c, y);
                if :: MARKED(key[m]) -> key[m] = MTOK(y) :: else -> key[m] = TOK(y) fi;
                PASS_TTL(m);
                UNINDEX(m, PREV(y)); INDEX(m, y);
                PASS_FENCE(m);
                DEQUEUE(m, c); OTHERS_WAIT(c, m, a, x);
                vote(c, m, a, 1)
#endif
            :: else ->
                ENQUEUE(m, c);                      /* waits its turn */
                MARK(m);
                printf("MSC: master %d refuses client %d: queued\n", m, c);
                vote(c, m, a, 0)
            fi
        fi
    :: k == FAST ->     /* HMGET served maxttl; SET NX PX; ZADD GT; EXISTS queue */
        if
        :: key[m] == FREE ->
            key[m] = TOK(TID(c, y)); ttl[m] = TTL; INDEX(m, TID(c, y));
            printf("MSC: master %d sets client %d's key (fast path)\n", m, c)
        :: else -> skip
        fi;
        /* EXISTS queue, in the same step: a lease granted with nobody
         * queued may be released without Lua (the client learns it from
         * the reply, on time or late: fq). Only where clients wait: else
         * no fleet has the command (nat) and fq would be state read by
         * nothing. */
#if defined(LIVE) || defined(WAITQ)
        if :: key[m] == TOK(TID(c, y)) && queue[m] == 0 -> fq[c] = fq[c] | BIT(m) :: else -> skip fi;
#endif
        /* a fresh token per attempt: c's old lease, marked, is not this one */
        if
        :: key[m] == TOK(TID(c, y)) && FAST_TRUSTED(m) -> DEQUEUE(m, c); vote(c, m, a, 1)
        :: key[m] == TOK(TID(c, y)) && !FAST_TRUSTED(m) ->
            /* not served: no vote, though the key may be ours (the cleanup
             * removes it: not a "no" that wrote nothing); the client checks
             * the marker (CHECK) and settles a master found pending */
            if :: a -> nno[c]++ :: else -> skip fi;
            if :: mk[m] == MK_PENDING -> pending(c, m, a) :: else -> skip fi
        :: else -> vote(c, m, a, 0)
        fi
    :: k == CLEAN ->    /* a failed attempt's cleanup: keep the place, hand quietly */
        ENQUEUE(m, c);
        UNINDEX(m, TID(c, y));
        if
        :: OWN(m, TID(c, y)) ->
#ifdef BROKEN_CLEANUP_FREES
            key[m] = FREE; ttl[m] = 0
#else
            hand_over(m, 0, NC, h)
#endif
#ifdef BROKEN_RELEASE_NO_COMPARE
        :: !OWN(m, TID(c, y)) && IS_TOK(key[m]) -> key[m] = FREE; ttl[m] = 0
#endif
        :: else -> skip
        fi
    :: k == REL ->
        UNINDEX(m, TID(c, y));
        if
        :: OWN(m, TID(c, y)) ->
#ifdef BROKEN_RELEASE_FREES
            key[m] = FREE; ttl[m] = 0           /* no hand-over: first come, first served */
#else
            hand_over(m, 1, REL_OVER(c, x), h)
#endif
#ifdef BROKEN_RELEASE_NO_COMPARE
        :: !OWN(m, TID(c, y)) && IS_TOK(key[m]) -> hand_over(m, 1, REL_OVER(c, x), h)
#endif
        :: else -> skip
        fi
    :: k == NREL ->     /* the release without Lua: ZREM; DELIFEQ key token (pipelined) */
        UNINDEX(m, TID(c, y));
        if
        :: key[m] == TOK(TID(c, y)) -> key[m] = FREE; ttl[m] = 0
        :: key[m] == MTOK(TID(c, y)) ->
            /* marked: the delete's compare fails, and the same connection
             * sends the script (fanout.c's redo), behind whatever the
             * client queued there since; a full channel loses it as a
             * dropped connection would */
            printf("MSC: master %d: client %d's key is marked: the script follows\n", m, c);
            if :: nfull(ch[CH(c, m)]) -> ch[CH(c, m)]!REL, 0, y :: else -> skip fi
        :: else -> skip /* gone or another's: the script follows too (the
                           delete's 0 does not say why), compares this
                           lease's token, and changes nothing */
        fi
    :: k == LEAVE ->    /* done waiting: leave the queue, pass a reservation on */
        DEQUEUE(m, c);
        if :: key[m] == RES(c) -> hand_over(m, 1, NC, h) :: else -> skip fi
    :: k == EXT ->      /* the extend script */
        if :: mk[m] != MK_NONE && bnd[m] < TTL -> bnd[m] = TTL :: else -> skip fi;
        if
        :: OWN(m, TID(c, y)) && EXT_TRUSTED(m) -> ttl[m] = TTL; INDEX(m, TID(c, y)); vote(c, m, a, 1)
        :: else -> vote(c, m, a, 0) /* another's, gone, or not served: it writes nothing */
        fi
    :: k == FENCE ->
        if :: x > fence[m] -> fence[m] = x :: else -> skip fi;
        vote(c, m, a, 1)
    :: k == LEASES ->   /* counts?, the latest live lease end, the fence counter, maxttl */
        if
        :: a ->
            nrep[c]++;
            if :: fence[m] > rfen[c] -> rfen[c] = fence[m] :: else -> skip fi;
            if
            :: !TRUSTED(m) -> nns[c]++; nsm[c] = nsm[c] | BIT(m)
            :: else ->
                REPORT(rmax[c], m)
            fi
        :: else -> skip
        fi
    :: k == SETTLE ->   /* x: the window; y: the rebirth named, and the fence << 4 */
        if
        :: mk[m] == MK_PENDING && NAMED(m) == (y & 15) ->
            mk[m] = MK_YOUNG; win[m] = x;
#ifndef BROKEN_FENCE_NOT_RAISED
            if :: (y >> 4) > fence[m] -> fence[m] = y >> 4 :: else -> skip fi;
#endif
            printf("MSC: master %d settled, window %d\n", m, x);
            if :: x == 0 -> mk[m] = MK_SERVED :: else -> skip fi
        :: else -> skip
        fi
    fi
}

/* Queue a request; a full channel or a master that is down loses it. */
inline send(c, m, k, a, x, y) {
    if
    :: !up[m] -> skip
    :: up[m] && !conn[CH(c, m)] && empty(ch[CH(c, m)]) ->
        conn[CH(c, m)] = 1; fresh[CH(c, m)] = 1; ch[CH(c, m)]!k, x, y
    :: up[m] && conn[CH(c, m)] && nfull(ch[CH(c, m)]) -> ch[CH(c, m)]!k, x, y
    :: up[m] && conn[CH(c, m)] && full(ch[CH(c, m)]) -> skip
    fi
}

inline send_all(c, k, a, x, m) {
    m = 0;
    do
    :: m < NM -> send(c, m, k, a, x, ME(c)); m++
    :: else -> m = 0; break
    od
}

/* The release: the script (REL), or where the master has a native
 * compare-and-delete and the lease was granted by the fast path with
 * nobody queued, the release without Lua (NREL). Whether the fleet's
 * masters have one is chosen at the start (init), for the fleet: a mixed
 * fleet releases some masters each way, which is no behaviour that these
 * two do not already contain master by master. Without waiters (the safety
 * checks but WAITQ) nothing is ever marked and NREL is REL's step: the
 * fleet has none, which keeps the state space. */
bool nat;
byte fq[NC];                    /* masters whose FAST granted with nobody queued */
/* Masters still to answer when the fast path won, every master that had
 * answered having granted with nobody queued: the release guesses that
 * they did too (acquire.c's guess_mask) and sends them NREL as well, behind
 * their FAST on the channel, unless their answer came first (GUESS_SETTLED).
 * A wrong guess: a key another's, gone, or marked, fails the compare and
 * the script follows; a grant with somebody queued is deleted without the
 * hand-over (the queue's head takes it at its next attempt). */
byte gq[NC];
inline send_release(c, fast, m) {
    send_release_to(c, fast, ALL, 0, ME(c), m)
}
/* The release of token @y to the masters in @mask; @over: it passes over
 * c (PASS: a lock run of two or more, the script's ARGV[6]). */
inline send_release_to(c, fast, mask, over, y, m) {
    m = 0;
    do
    :: m < NM -> if
                 :: !(mask & BIT(m)) -> skip
                 :: (mask & BIT(m)) && fast && nat && ((fq[c] | gq[c]) & BIT(m)) -> send(c, m, NREL, 0, 0, y)
                 :: (mask & BIT(m)) && !(fast && nat && ((fq[c] | gq[c]) & BIT(m))) -> send(c, m, REL, 0, over, y)
                 fi;
                 m++
    :: else -> m = 0; break
    od
}

/* A new round: replies to what is still queued belong to rounds that ended
 * (their fanout detached) and will not be counted. */
inline new_round(c) {
    old[CH(c, 0)] = len(ch[CH(c, 0)]); old[CH(c, 1)] = len(ch[CH(c, 1)]);
    old[CH(c, 2)] = len(ch[CH(c, 2)]);
#if NM > 3
    old[CH(c, 3)] = len(ch[CH(c, 3)]); old[CH(c, 4)] = len(ch[CH(c, 4)]);
#endif
    nok[c] = 0; nno[c] = 0; okm[c] = 0; nom[c] = 0;
    pend[c] = 0; fmax[c] = 0; tmo[c] = 0
}

inline drop_conn(i) {
    do
    :: nempty(ch[i]) -> ch[i]?_, _, _
    :: empty(ch[i]) -> break
    od;
    conn[i] = 0; fresh[i] = 0; old[i] = 0;
#if defined(LIVE) || defined(WAITQ)
    lf[i / NM] = lf[i / NM] & ~BIT(i % NM)      /* no answer will come: no follow-up */
#else
    skip
#endif
}

/* ---- the network and the masters: any connection's next request ---- */
#define DELIVER(c, m) \
    :: atomic { up[m] && nempty(ch[CH(c, m)]) -> ch[CH(c, m)]?k, x, y; \
                if :: old[CH(c, m)] > 0 -> old[CH(c, m)]--; a = 0; lastold = (old[CH(c, m)] == 0) \
                   :: else -> a = 1 fi; \
                exec(c, m, k, a, x, y, h); k = 0; a = 0; x = 0; y = 0; lastold = 0 }

#ifndef LIVE
proctype net() {
    mtype k; byte a, x, y, h;
end:
    do
    DELIVER(0, 0) DELIVER(0, 1) DELIVER(0, 2)
    DELIVER(1, 0) DELIVER(1, 1) DELIVER(1, 2)
#if NM > 3
    DELIVER(0, 3) DELIVER(0, 4) DELIVER(1, 3) DELIVER(1, 4)
#endif
    od
}
#else
/* LIVE: one process per connection, so that weak fairness (pan -f) means
 * what "messages are delivered" means: a request waiting on a live
 * connection is delivered eventually, whatever the other connections do.
 * (One process for all would let the scheduler serve one client's
 * connections forever.) */
proctype link(byte c; byte m) {
    mtype k; byte a, x, y, h;
end:
    do
    DELIVER(c, m)
    od
}
#endif

/* ---- snapshots (FAULT_KIND 1): one copy of one master's data ---- */
#ifndef LIVE
#define FK(n) (FAULT_KIND == (n) || FAULT_KIND == 9)
#ifndef FAULT_KIND
#define FAULT_KIND 9
#endif
#if FK(1)
byte sfrom = 255;               /* the master the snapshot is of; 255: none yet */
byte skey, sttl, sfence, smk, smkrun, sgen, swin, sbnd;
bool smkdur;
byte sidx;
#define SNAPS 1
#endif
#endif

/* ---- time ---- */
inline tick(i) {
    i = 0;
    do
    :: i < NM ->
        if :: ttl[i] > 0 -> ttl[i]--; if :: ttl[i] == 0 -> key[i] = FREE; IDX_ENDED(i) :: else -> skip fi
           :: else -> skip fi;
        if :: mk[i] == MK_YOUNG -> win[i]--; if :: win[i] == 0 -> mk[i] = MK_SERVED :: else -> skip fi
           :: mk[i] == MK_PENDING && ripe[i] < QL -> ripe[i]++
           :: else -> skip fi;
        i++
    :: else -> break
    od;
#ifdef SNAPS
    /* a snapshot keeps absolute times: its keys and windows end as the
     * master's would have */
    if
    :: sfrom < NM ->
        if :: sttl > 0 -> sttl--; if :: sttl == 0 -> skey = FREE :: else -> skip fi
           :: else -> skip fi;
        if :: smk == MK_YOUNG -> swin--; if :: swin == 0 -> smk = MK_SERVED :: else -> skip fi
           :: else -> skip fi;
        skip
    :: else -> skip
    fi;
#endif
    i = 0;
    do
    :: i < NC ->
        if :: v[i] > 0 -> v[i]--; if :: v[i] == 0 -> hold[i] = 0 :: else -> skip fi
           :: else -> skip fi;
        if :: ve[i] > 0 -> ve[i]-- :: else -> skip fi;
        if :: pt[i] > 0 -> pt[i]-- :: else -> skip fi;
        if :: dl[i] > 0 -> dl[i]-- :: else -> skip fi;
        if :: tmo[i] < QL -> tmo[i]++ :: else -> skip fi;
        if :: tk[i] < QL -> tk[i]++ :: else -> skip fi;
#ifdef OPER
        skip;
#endif
        i++
    :: else -> break
    od;
#ifdef LIVE
    if
    :: (waiting[0] || waiting[1]) && !hold[0] && !hold[1] -> stuck++; assert(stuck <= STUCK_MAX)
    :: else -> skip
    fi;
#endif
    i = 0
}

/* A master whose clock runs fast ends a key or a window up to D early. */
#define EARLY(m) \
    :: atomic { ttl[m] > 0 && ttl[m] <= D -> ttl[m] = 0; key[m] = FREE; IDX_ENDED(m); \
                printf("MSC: master %d's clock runs fast: its key expires early\n", m) } \
    :: atomic { mk[m] == MK_YOUNG && win[m] <= D -> win[m] = 0; mk[m] = MK_SERVED; \
                printf("MSC: master %d's clock runs fast: its window ends early\n", m) }

proctype clock() {
    byte i;
end:
    do
#ifdef LIVE
    :: atomic { timeout -> printf("MSC: tick\n"); tick(i) }
#else
#ifdef TICKS
    :: atomic { nt < TICKS -> nt++; printf("MSC: tick\n"); tick(i) }
#else
    :: atomic { printf("MSC: tick\n"); tick(i) }
#endif
#if D > 0
    EARLY(0) EARLY(1) EARLY(2)
#if NM > 3
    EARLY(3) EARLY(4)
#endif
#endif
#endif
    od
}

/* Send to every master in mask. */
inline send_mask(c, mask, k, x, m) {
    m = 0;
    do
    :: m < NM -> if :: mask & BIT(m) -> send(c, m, k, 0, x, ME(c)) :: else -> skip fi; m++
    :: else -> m = 0; break
    od
}

#ifndef LIVE
/* ---- master faults (at most FAULTS) ----
 * FAULT_KIND picks one kind (0 restart, nothing kept; 1 restart from a
 * snapshot; 3 FLUSHALL; 4 a lost connection; 5 the master's name moves
 * onto a server whose marker counts); 9, all of them. */
inline drop_conns(m, i) {
    i = 0;
    do
    :: i < NC -> drop_conn(CH(i, m)); i++
    :: else -> i = 0; break
    od
}

/* A master's data as a backup, a replica or an AOF that stops here would
 * keep it. */
#ifdef SNAPS
inline snapshot(j) {
    sfrom = j; skey = key[j]; sttl = ttl[j]; sfence = fence[j]; smk = mk[j]; smkrun = mkrun[j];
    sgen = gen[j]; swin = win[j]; sbnd = bnd[j]; smkdur = mkdur[j];
    sidx = idx[j];
    printf("MSC: a copy of master %d's data is taken (key %d, marker %d)\n", j, skey, smk)
}
#endif

#ifdef GHOST
bool ghost;                     /* the earlier holder's late release has run */
#endif

proctype faults() {
    byte m, i;
end:
    do
#ifdef GHOST
    /* The release of an earlier holder of the key (client 1, which takes
     * no part otherwise) was still on its way: it runs at any moment, once,
     * on every master. It compares its token: it deletes no key, and it
     * removes its own lease's index entry, which is gone already: nothing,
     * unless entries are named by the key. */
    :: atomic { !ghost -> ghost = 1; printf("MSC: an earlier holder's late release runs\n");
        m = 0;
        do :: m < NM -> UNINDEX(m, 1); m++ :: else -> m = 0; break od }
#endif
#ifdef SNAPS
    /* The copy (once, at any moment): master 0's own (a backup, a replica
     * in sync until now, an AOF whose later writes will be lost, the
     * moment appendfsync is switched off at run time) or master 1's. */
    :: atomic { sfrom == 255 && nf < FAULTS -> if :: snapshot(0) :: snapshot(1) fi }
#endif
    :: nf < FAULTS -> atomic {
        nf++;
        /* masters are alike: the first fault hits master 0, a second 0 or 1 */
        if :: m = 0 :: nf > 1 -> m = 1 fi;
        if
        :: FK(0) -> printf("MSC: master %d restarts, nothing kept\n", m);
            inc[m]++; key[m] = FREE; ttl[m] = 0; fence[m] = 0; queue[m] = 0; cut[m] = 0;
            mk[m] = MK_NONE; win[m] = 0; mkdur[m] = 0; idx[m] = 0; ripe[m] = 0;
            drop_conns(m, i)
#ifdef SNAPS
        :: FK(1) && sfrom < NM ->
            printf("MSC: master %d restarts from the copy of master %d's data\n", m, sfrom);
            inc[m]++; key[m] = skey; ttl[m] = sttl; fence[m] = sfence; queue[m] = 0; cut[m] = 0;
            mk[m] = smk; mkrun[m] = smkrun; gen[m] = sgen; win[m] = swin; bnd[m] = sbnd;
            mkdur[m] = smkdur; idx[m] = sidx; ripe[m] = 0;
            drop_conns(m, i)
#endif
        :: FK(3) -> printf("MSC: master %d FLUSHALL\n", m);
            key[m] = FREE; ttl[m] = 0; fence[m] = 0; queue[m] = 0; cut[m] = 0;
            mk[m] = MK_NONE; win[m] = 0; mkdur[m] = 0; idx[m] = 0; ripe[m] = 0;
            skip
        :: FK(5) -> printf("MSC: master %d's name moves onto a server that counts (key, queue, fence lost)\n", m);
            /* The old server is stopped for good (the operator's rule):
             * every connection drops, and each client's next one goes
             * to the new server, knowing that the address changed. Its
             * marker is its own process's, served: it would count. */
            inc[m]++; key[m] = FREE; ttl[m] = 0; fence[m] = 0; queue[m] = 0; cut[m] = 0;
            mk[m] = MK_SERVED; mkrun[m] = inc[m]; win[m] = 0; mkdur[m] = 0;
            idx[m] = 0; ripe[m] = 0;
            drop_conns(m, i); moved[CH(0, m)] = 1; moved[CH(1, m)] = 1; mvd[m] = 1
        :: FK(4) -> printf("MSC: client 0's connection to master %d drops\n", m); drop_conn(CH(0, m))
        :: FK(4) -> printf("MSC: client 1's connection to master %d drops\n", m); drop_conn(CH(1, m))
        fi;
        m = 0 }
    :: else -> break
    od
}

/* ---- third parties: the fleet as a fresh client measures it ----
 * measure(): one look at every master at one instant (LEASES, each behind
 * the looker's handshake): how many answered (nr), how many do not count
 * (nn), the longest live lease a counting master reports (rm), the largest
 * fence counter (rf). */
inline measure(i, nr, nn, rm, rf) {
    i = 0; nr = 0; nn = 0; rm = 0; rf = 0;
    do
    :: i < NM ->
        if
        :: up[i] ->
            check_marker(i);
            nr++;
            if :: fence[i] > rf -> rf = fence[i] :: else -> skip fi;
            if
            :: !TRUSTED(i) -> nn++
            :: else ->
                REPORT(rm, i)
            fi
        :: else -> skip
        fi;
        i++
    :: else -> i = 0; break
    od
}
#define TIGHT_(nr, nn) (nr == NM && nn < Q)

/* A settle measures the fleet only once every attempt that may have
 * counted the reborn master's vote from before its rebirth has decided:
 * an attempt decides within a bound of its start (here, before the first
 * tick after it: its validity is gone then), so a measurement a tick
 * after the rebirth sees such a lease on the rest of its quorum (memory.c
 * settle_start waits the bound; acquire.c refuses a quorum that came
 * later). The mistake: measuring at once. */
#ifdef BROKEN_SETTLE_AT_ONCE
#define RIPE(m) (mk[m] == MK_PENDING)
#define RIPENED(c) skip
#else
#define RIPE(m) (mk[m] == MK_PENDING && ripe[m] >= QL)
#define RIPENED(c) tk[c] = 0; tk[c] >= QL
#endif

/* SETTLER: other clients, whose settles are never late: at any moment
 * one stamps a master it finds without a marker (its handshake), or
 * settles a pending one from one look at the fleet. */
#ifdef SETTLER
proctype settler() {
    byte m, i, nr, nn, rm, rf, w;
end:
    do
    :: atomic { up[0] && (mk[0] == MK_NONE || mkrun[0] != inc[0]) -> check_marker(0) }
    :: atomic { up[1] && (mk[1] == MK_NONE || mkrun[1] != inc[1]) -> check_marker(1) }
    :: atomic { (RIPE(0) || RIPE(1) || RIPE(2)) ->
        if :: RIPE(0) -> m = 0 :: RIPE(1) -> m = 1 :: RIPE(2) -> m = 2 fi;
        measure(i, nr, nn, rm, rf);
        if
        :: mk[m] == MK_PENDING ->
            if :: TIGHT_(nr, nn) -> w = rm + 2 * D :: else -> w = TTL fi;
#ifdef BROKEN_SETTLE_QUORUM
            if :: nr == NM -> w = rm + 2 * D :: else -> skip fi;
#endif
#ifdef BROKEN_SETTLE_NO_DRIFT
            if :: TIGHT_(nr, nn) -> w = rm :: else -> skip fi;
#endif
            mk[m] = MK_YOUNG; win[m] = w;
#ifndef BROKEN_FENCE_NOT_RAISED
            if :: rf > fence[m] -> fence[m] = rf :: else -> skip fi;
#endif
            printf("MSC: another client settles master %d, window %d\n", m, w);
            if :: w == 0 -> mk[m] = MK_SERVED :: else -> skip fi
        :: else -> skip
        fi;
        m = 0; nr = 0; nn = 0; rm = 0; rf = 0; w = 0 }
    od
}
#endif

/* ---- the operator (OPER 1: readmit; 2: declare-empty), once ----
 * Its look at the fleet (LEASES from every master) and its word (DECLARE
 * on each) are one step: what it must not miss is a lease live on a
 * master that remembers. It refuses where one is, or where the fleet
 * cannot say (a master down, a quorum that does not count): a lease may
 * then live only on masters that forgot it. readmit makes every master
 * count; declare-empty those that hold no key. Either raises each fence
 * counter to the fleet's largest. */
#ifdef OPER
proctype oper() {
    byte m, i, nr, nn, rm, rf;
    /* Its handshakes stamp a master found without a marker; it looks only
     * once every master that does not count was reborn a quorum's bound
     * ago (declare.c's wait, the DECLARE script's age check): every attempt
     * that counted a vote such a master gave before it forgot has decided
     * by then, its lease on the rest of its quorum. */
    atomic {
        m = 0;
        do
        :: m < NM -> if :: up[m] -> check_marker(m) :: else -> skip fi; m++
        :: else -> m = 0; break
        od
    }
    atomic {
        (!up[0] || mk[0] == MK_SERVED || ripe[0] >= QL) &&
        (!up[1] || mk[1] == MK_SERVED || ripe[1] >= QL) &&
        (!up[2] || mk[2] == MK_SERVED || ripe[2] >= QL) ->
        measure(i, nr, nn, rm, rf);
#ifndef BROKEN_OPERATOR_BLIND
        if
        /* declare.c dec_refusal: a live lease a master that counts
         * reports, or a master that did not answer (it may be the one
         * that remembers). A majority that sits out is not refused: no
         * look sees what only the masters that forgot held, and the word
         * is the operator's (docs/memory-guard.md, "The operator's word:
         * declare-empty and readmit"). */
        :: nn > 0 && (rm > 0 || nr < NM) -> printf("MSC: the operator is refused: a lease may be live\n"); goto done
        :: else -> skip
        fi;
#endif
        m = 0;
        do
        :: m < NM ->
            if
            :: up[m] && ripe[m] >= QL && mk[m] != MK_SERVED &&
               (OPER == 1 || (key[m] == FREE && fence[m] == 0)) ->
                mk[m] = MK_SERVED; mkrun[m] = inc[m]; win[m] = 0;
                if :: rf > fence[m] -> fence[m] = rf :: else -> skip fi;
                printf("MSC: the operator makes master %d count\n", m)
            :: else -> skip
            fi;
            m++
        :: else -> break
        od;
done:   m = 0; nr = 0; nn = 0; rm = 0; rf = 0
    }
}
#endif

/* ---- the prober: a third client, with no delay at all ----
 * At any moment, a fresh client whose requests all arrive at once would
 * be granted by every master that is up, counts after its handshake, and
 * holds no key. If that is a quorum while somebody holds, it would hold
 * too: two holders. (A client made after a name moved and before a client
 * that saw the move reached that server would count it: the operator's
 * rule, docs/memory-guard.md, "The operator's rule for moving a name";
 * the prober is not that client.)
 * FENCED: with nobody holding, the fence it would be given (one more than
 * the largest counter of its quorum) must be above every fence granted. */
#if defined(BROKEN_GUARD_OFF)
#define COUNTS_FRESH(m) true
#elif defined(BROKEN_TRUST_SNAPSHOT)
#define COUNTS_FRESH(m) (mk[m] == MK_SERVED)
#elif defined(BROKEN_VOUCH_ADOPTS)
#define COUNTS_FRESH(m) (mk[m] == MK_SERVED && (mkrun[m] == inc[m] || mkdur[m]))
#else
#define COUNTS_FRESH(m) (mk[m] == MK_SERVED && mkrun[m] == inc[m])
#endif
/* ... or, on a master it met before that has not restarted since (its
 * connection kept), by what that connection lets count: the fast path's
 * read of the marker, or (check-trusted) the handshake's word alone. */
#define COUNTS_WARM(m) (inc[m] == 0 && (FAST_TRUSTED(m) || (mk[m] == MK_NONE && VANISHED_COUNTS)))
#ifdef BROKEN_MOVE_TRUSTED
#define PG(m) (up[m] && key[m] == FREE && (COUNTS_FRESH(m) || COUNTS_WARM(m)))
#else
#define PG(m) (up[m] && key[m] == FREE && (COUNTS_FRESH(m) || COUNTS_WARM(m)) && !mvd[m])
#endif
#define PGN(m) (PG(m) -> 1 : 0)
#if NM > 3
#define NGRANT (PGN(0) + PGN(1) + PGN(2) + PGN(3) + PGN(4))
#else
#define NGRANT (PGN(0) + PGN(1) + PGN(2))
#endif
#define LOW(m) (fence[m] < hi)
#define STALE_PAIR ((PG(0) && PG(1) && LOW(0) && LOW(1)) || (PG(0) && PG(2) && LOW(0) && LOW(2)) || \
                    (PG(1) && PG(2) && LOW(1) && LOW(2)))
proctype prober() {
end:
    if
    :: atomic { (hold[0] || hold[1]) && NGRANT >= Q ->
        printf("MSC: a client asking now would be granted by a quorum too\n"); assert(false) }
#if defined(FENCED) && NM == 3
    :: atomic { !hold[0] && !hold[1] && STALE_PAIR ->
        printf("MSC: a client asking now would be given a fence no larger than %d\n", hi); assert(false) }
#endif
    fi
}

/* ---- the taker: the prober's grant made real, once ----
 * TAKER: client 1 as a fresh client with no delay at all, once: at a
 * moment when nobody holds and its requests, all arriving at once, would
 * be granted by a quorum, it takes the key on every master that would
 * grant it (and, fenced, writes its fence back at the same instant) and
 * holds for its validity; it never releases (its keys expire). What it
 * adds to the prober: another client's lease, live on masters, that a
 * request still on its way (a pass attempt's) meets. */
#ifdef TAKER
#ifdef AFTER_PASS
#define TAKER_READY passed      /* once client 0 has passed */
#else
#define TAKER_READY true
#endif
proctype taker() {
    byte m, t;
    atomic {
        TAKER_READY && !hold[0] && !hold[1] && NGRANT >= Q ->
        m = 0;
        do
        :: m < NM ->
            if
            :: PG(m) -> key[m] = TOK(1); ttl[m] = TTL; INDEX(m, 1);
#ifdef FENCED
                fence[m]++; if :: fence[m] > t -> t = fence[m] :: else -> skip fi;
#endif
                skip
            :: else -> skip
            fi;
            m++
        :: else -> m = 0; break
        od;
#ifdef FENCED
        do
        :: m < NM -> if :: up[m] && fence[m] < t -> fence[m] = t :: else -> skip fi; m++
        :: else -> m = 0; break
        od;
        assert(t > hi); hi = t;
#endif
        hold[1] = 1; v[1] = TTL - MARGIN;
        printf("MSC: client 1 takes the lock at once (fence %d)\n", t);
        t = 0
    }
}
#endif

/* ---- a client: ROUNDS waiting attempts; holds, extends, releases ---- */
#ifdef FENCED
#define WON_FAST(r) 0           /* a fenced acquire never takes the fast path */
#else
#define WON_FAST(r) ((r) == 1)  /* the first attempt is the fast path */
#endif
#ifdef PASS
#define PASSED ps               /* the lock came from a pass: the script's grant */
#else
#define PASSED 0
#endif
/* Validity runs from the attempt's start (v set there, counted down by
 * every tick since). The mistake: from the decision. */
#ifdef BROKEN_VALIDITY_FROM_DECISION
#define START_VALID(c) skip
#define DECIDE_VALID(c) v[c] = TTL - MARGIN
#else
#define START_VALID(c) v[c] = TTL - MARGIN
#define DECIDE_VALID(c) skip
#endif
/* A quorum counts only if reached before a tick since its round started
 * (op.c rl_quorum_late: RL_QUORUM_MAX_MS, far below a tick): a reborn
 * master's fleet is measured a tick after its rebirth (RIPE), by when
 * every attempt that counted its vote from before has decided. The
 * mistake: a quorum however late. */
#ifdef BROKEN_QUORUM_LATE
#define LATE(c) false
#else
#define LATE(c) (tmo[c] >= QL)
#endif
/* The settle's window (memory.c settle_decide): measured ("tight") when
 * every master answered and fewer than a quorum do not count: the longest
 * live lease reported, plus the drift allowance of the reborn master's
 * clock; else the fleet's longest ttl. */
#if defined(BROKEN_SETTLE_QUORUM)
#define TIGHT(c) (nrep[c] == NM)
#else
#define TIGHT(c) (nrep[c] == NM && nns[c] < Q)
#endif
#ifdef BROKEN_SETTLE_NO_DRIFT
#define MEASURED(c) rmax[c]
#else
#define MEASURED(c) (rmax[c] + 2 * D)
#endif
proctype client(byte c) {
    byte m, r, e, s, w, okl, nol, pl, fm;
    bool won;
#ifdef PASS
    byte np;                    /* passes made */
    bool ps, hf;                /* this attempt (and lock) is a pass; the lock it
                                   took over was the fast path's */
#endif
#ifdef SEQ
    (c == 1 || done1);          /* SEQ: client 0 starts once client 1 is done */
#endif
#ifdef AFTER_PASS
    (c == 0 || passed);         /* client 1 starts once client 0 has passed */
#endif
    do
    :: r < ROUNDS(c) ->
        r++;
        atomic {
            new_round(c); fsnap[c] = hi; START_VALID(c); waiting[c] = 1; fq[c] = 0; gq[c] = 0;
            printf("MSC: client %d attempt %d starts\n", c, r);
            if :: r == 1 -> send_all(c, FIRST, 0, 0, m) :: else -> send_all(c, ACQ, 0, 0, m) fi
        }
        /* decided at the quorum-th OK, or before it: held or refused by
         * enough masters, or the node timeout (any time: a faster timeout
         * is only a different schedule) */
#ifdef PASS
decide:
#endif
        atomic {
            okl = okm[c]; nol = nom[c]; pl = pend[c]; fm = fmax[c];
            if :: nok[c] >= Q && !LATE(c) -> won = 1 :: else -> won = 0 fi;
            DECIDE_VALID(c)
        }
#if defined(FENCED) && !defined(BROKEN_NO_WRITEBACK)
        if
        :: won ->       /* fence write-back: counter = max(counter, t), a majority acks */
            atomic { new_round(c); send_all(c, FENCE, 0, fm, m) };
            atomic { if :: nok[c] >= Q -> won = 1 :: else -> won = 0 fi }
        :: else -> skip
        fi;
#endif
#ifdef PASS
held:
#endif
        if
        :: atomic { won && v[c] > 0 ->
            printf("MSC: client %d holds (fence %d, validity %d)\n", c, fm, v[c]);
            assert(!hold[OTHER(c)]);                /* mutual exclusion */
#ifdef FENCED
            assert(fm > fsnap[c]);                  /* fences grow, whatever was lost */
#endif
            if :: fm > hi -> hi = fm :: else -> skip fi;
            hold[c] = 1; waiting[c] = 0;
#ifdef WAITQ
            /* the guess (gq): the fast path won and every answer was a
             * grant with nobody queued */
            if :: WON_FAST(r) && !PASSED && (nol | pl | (okl & ~fq[c])) == 0 -> gq[c] = ALL & ~okl
               :: else -> skip fi;
            /* leave where refused; where still to answer, if it refuses */
            lf[c] = ALL & ~okl & ~nol; new_round(c); send_mask(c, nol, LEAVE, 0, m);
#endif
            skip }
            do
            :: atomic { hold[c] && e < EXTS -> e++; new_round(c); ve[c] = TTL - MARGIN;
                        send_all(c, EXT, 0, 0, m) };
               atomic { if
                        :: nok[c] >= Q && !LATE(c) && hold[c] && ve[c] > 0 -> v[c] = ve[c];
                           printf("MSC: client %d extended (validity %d)\n", c, v[c])
                        :: else -> skip
                        fi }
            :: atomic { hold[c] -> hold[c] = 0; v[c] = 0; new_round(c);
                        printf("MSC: client %d releases\n", c);
                        send_release(c, WON_FAST(r) && !PASSED, m) }; break
#ifdef PASS
            /* the pass: instead of its release, the lock's holder starts
             * the attempt of a local waiter, the process's other token;
             * the holder stops holding at once, and nothing else is sent */
            :: atomic { c == 0 && hold[c] && np < PASSES ->
                        np++; hold[c] = 0; hf = WON_FAST(r) && !ps; ps = 1; AFTER_PASS_SET;
                        printf("MSC: client %d passes: its token %d stops holding, token %d's attempt starts\n",
                               c, me0, PREV(me0));
                        me0 = PREV(me0);
#ifdef BROKEN_PASS_NO_ROUND
                        /* granted from the previous holder's votes, with its
                         * start: no round of its own */
                        won = 1; fsnap[c] = hi };
                        goto held
#else
                        v[c] = 0; okl = 0; nol = 0; pl = 0; fm = 0; won = 0;
                        new_round(c); fsnap[c] = hi; START_VALID(c); waiting[c] = 1;
                        send_all(c, ACQ, 0, 1, m) };
                        goto decide
#endif
#endif
            :: !hold[c] -> break                    /* paused past its validity */
            od
        :: atomic { else ->
            printf("MSC: client %d attempt %d fails, cleans up\n", c, r);
            new_round(c); send_mask(c, ALL & ~nol, CLEAN, 0, m);
#ifdef PASS
            /* a pass that lost: the previous holder's release goes now
             * to every master whose vote was not a grant */
            if
            :: ps -> printf("MSC: client %d's pass lost: token %d's release follows\n", c, PREV(me0));
                     send_release_to(c, hf, ALL & ~okl, 0, PREV(me0), m)
            :: else -> skip
            fi;
#endif
            skip }
            if
            :: pl != 0 && s < SETTLES ->            /* a master waits for its window */
                s++;
                RIPENED(c);
                atomic { new_round(c); nrep[c] = 0; nns[c] = 0; rmax[c] = 0; nsm[c] = 0; rfen[c] = 0;
                         send_all(c, LEASES, 0, 0, m) };
                atomic {
                    if
                    :: TIGHT(c) -> w = MEASURED(c)
                    :: else -> w = TTL              /* the fleet's longest ttl */
                    fi;
                    printf("MSC: client %d settles with window %d (%d reports, fence %d)\n", c, w,
                           nrep[c], rfen[c]);
                    m = 0;
                    do
                    :: m < NM -> if :: (pl & BIT(m)) && conn[CH(c, m)] ->
                                       send(c, m, SETTLE, 0, w, pg[CH(c, m)] | (rfen[c] << 4))
                                    :: else -> skip fi; m++
                    :: else -> m = 0; break
                    od;
                    w = 0 }
            :: else -> skip
            fi
        fi;
        okl = 0; nol = 0; pl = 0; fm = 0; won = 0
#ifdef PASS
        ; ps = 0; hf = 0
#endif
    :: else -> break
    od;
#ifdef WAITQ
    atomic { waiting[c] = 0; new_round(c); send_all(c, LEAVE, 0, 0, m) }
#endif
    if :: c == 1 -> done1 = 1 :: else -> skip fi
}

/* PINGER: client 1 takes no lock; it meets the masters (a ping, a status:
 * its handshake's CHECK) and settles one it finds pending, as any client
 * does, from one look at the fleet a quorum's bound later (its LEASES, at
 * one instant: their spread is not what this check is about); its SETTLE
 * may be delayed like any request (a slow network, a paused client). */
#ifdef PINGER
proctype pinger(byte c) {
    byte m, i, nr, nn, rm, rf, w;
    atomic {
        (mk[0] == MK_PENDING || mk[1] == MK_PENDING || mk[2] == MK_PENDING) ->
        m = 0;
        do
        :: m < NM -> if :: mk[m] == MK_PENDING -> pending(c, m, 1) :: else -> skip fi; m++
        :: else -> m = 0; break
        od;
        w = pend[c]
    }
    RIPENED(c);
    atomic {
        measure(i, nr, nn, rm, rf);
        if :: TIGHT_(nr, nn) -> rm = rm + 2 * D :: else -> rm = TTL fi;
#ifdef BROKEN_SETTLE_NO_DRIFT
        if :: TIGHT_(nr, nn) -> rm = rm - 2 * D :: else -> skip fi;
#endif
        printf("MSC: client %d settles with window %d\n", c, rm);
        m = 0;
        do
        :: m < NM -> if :: (w & BIT(m)) -> send(c, m, SETTLE, 0, rm, pg[CH(c, m)] | (rf << 4))
                        :: else -> skip fi; m++
        :: else -> m = 0; break
        od;
        w = 0; nr = 0; nn = 0; rm = 0; rf = 0 }
}
#endif

#else   /* LIVE */

#if NM > 3
#define QUEUED_LIVE(w) ((queue[0] & BIT(w)) && (queue[1] & BIT(w)) && (queue[2] & BIT(w)) && (queue[3] & BIT(w)))
#else
#define QUEUED_LIVE(w) ((queue[0] & BIT(w)) && (queue[1] & BIT(w)))
#endif

/* ---- a client that wants the lock again and again ---- */
/* -DCRASH: client 1 may crash once, between any two of its steps (while
 * waiting, holding or cleaning up): it sends nothing more; what it sent is
 * still delivered; its keys, reservations and queue places stay until
 * they expire or are dropped. */
bool dead[NC];
bool doom;                      /* the crash is due: client 1 dies at its next step */
#ifdef CRASH
#define CAN_CRASH(c) ((c) == 1 && doom)
/* Dooms client 1 at a moment of its choosing, or never. (An escape that
 * is executable takes priority in Promela: the choice lives here.) */
proctype killer() {
    if
    :: doom = 1
    :: skip
    fi
}
#else
#define CAN_CRASH(c) false
#endif

/* PASS: client 0's lock's run (run0): 1 for an ordinary grant, one more
 * for a pass that heard "another client waits" (oth), else 1 again; a
 * holder passes only below the bound LRM (BROKEN_PASS_UNBOUNDED: always;
 * the run then stops counting at LRM). A release of a run of two or more
 * passes over client 0 (RUN_OVER). Where the pass may be made, it is a
 * choice (the holder may have no local waiter), unless PASS_ALWAYS: the
 * process then always has one. streak: client 0's grants in a row while
 * client 1 waits in every live master's queue; at most LRM. */
#ifdef PASS
byte run0;
#ifndef LTL_PROGRESS
byte streak;
#define STREAK(c) \
    if :: (c) == 0 && waiting[1] && QUEUED_LIVE(1) -> streak++; \
          printf("MSC: client 0's grant %d in a row while client 1 waits in every live queue\n", streak); \
          assert(streak <= LRM) \
       :: else -> streak = 0 fi
#else
#define STREAK(c) skip
#endif
#define RUN_GRANT(c) \
    if :: (c) == 0 && ps -> ps = 0; if :: oth && run0 < LRM -> run0++ :: oth && run0 >= LRM -> skip \
                                       :: else -> run0 = 1 fi \
       :: (c) == 0 && !ps -> run0 = 1 \
       :: else -> skip fi; \
    STREAK(c)
#define RUN_OVER(c) ((c) == 0 && run0 >= 2)
/* PASS_CANCEL: a pass attempt may lose at any moment before it is decided
 * (its waiter cancelled; its node timeout on a master that is slow rather
 * than down); another local waiter of the process goes on waiting, its
 * wait begun after client 1's (LOST_TICKET). PASS_CANCEL_OLD: begun before
 * client 1's, and queued since (the ticket stays): docs/model.md, "What
 * the model says about the design". */
#ifdef PASS_CANCEL
#define PASS_LOSES(c) ps
#else
#define PASS_LOSES(c) false
#endif
#ifdef PASS_CANCEL_OLD
#define LOST_TICKET(c) skip
#else
#define LOST_TICKET(c) tkt[OTHER(c)] = 0; tkt[c] = 1
#endif
#ifdef BROKEN_PASS_UNBOUNDED
#define MAY_PASS true
#else
#define MAY_PASS (run0 < LRM)
#endif
#ifdef PASS_ALWAYS
#define PASS_OR_RELEASE else
#else
#define PASS_OR_RELEASE true
#endif
#else
#define RUN_GRANT(c) skip
#define RUN_OVER(c) 0
#define PASS_LOSES(c) false
#endif

proctype client(byte c) {
    byte m, okl;
    bool first, wf;
#ifdef PASS
    byte gr;                    /* a lost pass: the masters that granted it */
    bool ps;                    /* this attempt is a pass */
#endif
    {
end:
    do
    :: atomic {
        /* tickets are start times: the newest waiter's is the larger,
         * and an entry left over from the other's last wait keeps its
         * earlier one, as in the code */
        waiting[c] = 1; first = 1; tkt[OTHER(c)] = 0; tkt[c] = 1 }
again:
        atomic { new_round(c); v[c] = TTL - MARGIN; woke[c] = 0; dl[c] = NODE_TO; fq[c] = 0; gq[c] = 0;
                 if :: first -> send_all(c, FIRST, 0, 0, m) :: else -> send_all(c, ACQ, 0, 0, m) fi };
#ifdef PASS
decide:
#endif
        if
        :: atomic { nok[c] >= Q && v[c] > 0 ->
            assert(!hold[OTHER(c)]);
            assert(owed != OTHER(c) + 1);           /* the head is served first */
            printf("MSC: client %d holds\n", c);
            RUN_GRANT(c);
            hold[c] = 1; waiting[c] = 0; stuck = 0; owed = 0; okl = okm[c]; wf = first;
            /* the guess (gq): the fast path won and every answer was a
             * grant with nobody queued */
            if :: first && (nom[c] | pend[c] | (okl & ~fq[c])) == 0 -> gq[c] = ALL & ~okl
               :: else -> skip fi;
            /* leave where the attempt was refused now, where it is still
             * to answer when the answer says so (LATE_LEAVE) */
            lf[c] = ALL & ~okl & ~nom[c]; okl = nom[c];
            new_round(c); send_mask(c, okl, LEAVE, 0, m); okl = 0 }
        /* lost: the code waits for every master's answer, then cleans up
         * only where the attempt may have written (not where it was
         * refused); a master still silent fails at the node timeout and is
         * cleaned up blind. Here the decision may come once a majority
         * refused, the others silent: the node timeout, which may come at
         * any time (time passes here only when nothing else can move, so
         * a wait for it would let the other client loop forever). */
        :: atomic { (nok[c] < Q && (nno[c] > NM - Q || dl[c] == 0)) || (nok[c] >= Q && v[c] == 0) ||
                    PASS_LOSES(c) ->
            printf("MSC: client %d attempt fails, cleans up\n", c);
#ifdef PASS
            gr = okm[c];
#endif
            okl = nom[c]; new_round(c); send_mask(c, ALL & ~okl, CLEAN, 0, m); okl = 0;
#ifdef PASS
            /* a pass that lost: the previous holder's release goes now to
             * every master whose vote was not a grant, passing over this
             * client if that lock's run was two or more */
            if
            :: ps -> printf("MSC: client %d's pass lost: token %d's release follows\n", c, PREV(me0));
                     send_release_to(c, 0, ALL & ~gr, run0 >= 2, PREV(me0), m); ps = 0;
                     LOST_TICKET(c)
            :: else -> skip
            fi;
            gr = 0;
#endif
            /* the first attempt (no place in the queues) tries again at
             * once, taking its place */
            if :: first -> pt[c] = 0; first = 0 :: else -> pt[c] = POLL fi };
            (pt[c] == 0 || woke[c]);
            goto again
        fi;
#ifdef PASS
        /* the pass: client 0's holder, instead of its release, starts the
         * attempt of a local waiter (the process's other token), if its
         * lock's run is below the bound; it stops holding at once */
        if
        :: atomic { c == 0 && MAY_PASS ->
            hold[c] = 0; v[c] = 0; ps = 1; first = 0; wf = 0; waiting[c] = 1;
            printf("MSC: client %d passes (run %d): token %d stops holding, token %d's attempt starts\n",
                   c, run0, me0, PREV(me0));
            me0 = PREV(me0);
            new_round(c); v[c] = TTL - MARGIN; woke[c] = 0; dl[c] = NODE_TO; oth = 0;
            send_all(c, ACQ, 0, 1, m) };
            goto decide
        :: PASS_OR_RELEASE -> skip
        fi;
#endif
        atomic { hold[c] = 0; v[c] = 0; new_round(c);
                 printf("MSC: client %d releases\n", c);
                 /* the other waits in every live master's queue: it is
                  * the head everywhere, and this release's hand-over is its */
                 if
                 :: waiting[OTHER(c)] && QUEUED_LIVE(OTHER(c)) -> owed = OTHER(c) + 1;
                    printf("MSC: client %d waits in every live queue: it is next\n", OTHER(c))
                 :: else -> skip
                 fi;
                 send_release_to(c, wf, ALL, RUN_OVER(c), ME(c), m); wf = 0 }
    od
    } unless {
        atomic { CAN_CRASH(c) && !dead[c] -> dead[c] = 1;
                 printf("MSC: client %d crashes (holding: %d)\n", c, hold[c]);
                 hold[c] = 0; waiting[c] = 0; v[c] = 0;
                 if :: owed == c + 1 -> owed = 0 :: else -> skip fi }
    }
}

#ifdef LTL_PROGRESS
/* Every waiting client eventually holds, or crashed (weak fairness: pan -a -f). */
ltl progress { [] ((waiting[0] -> <> (hold[0] || dead[0])) && (waiting[1] -> <> (hold[1] || dead[1]))) }
#endif
#endif

init {
    byte i;
    atomic {
        do
        :: i < NM -> up[i] = 1; mk[i] = MK_SERVED; bnd[i] = TTL;    /* declared empty */
#ifdef BROKEN_VOUCH_ADOPTS
                     mkdur[i] = 1;      /* AOF always, and its marker vouched for it */
#endif
                     i++
        :: else -> break
        od;
#ifdef UNDECL
        /* master 0 is new and was never declared: pending, as its first
         * client's handshake leaves it (faults hit master 0 first, too) */
        reborn(0, TTL);
#endif
#if defined(LIVE) || defined(WAITQ)
        if :: nat = 1 :: skip fi;       /* the fleet has DELIFEQ or not */
#endif
        i = 0;
#ifdef LIVE
        up[NM - 1] = 0;                 /* f = 1: the last master is down */
#else
        tkt[0] = 0; tkt[1] = 1;         /* clients are alike: 0 queued first */
        run faults();
#endif
#ifdef OPER
        run oper();
#endif
#ifdef SETTLER
        run settler();
#endif
#ifndef LIVE
        run prober();
#endif
#ifdef TAKER
        run taker();
#endif
#ifdef LIVE
        i = 0;
        do
        :: i < NM - 1 -> run link(0, i); run link(1, i); i++    /* the last master is down */
        :: else -> break
        od;
#else
        run net();
#endif
#ifdef CRASH
        run killer();
#endif
        run clock(); run client(0);
#if defined(PINGER)
        run pinger(1)
#elif !defined(ONE_CLIENT)
        run client(1)
#endif

    }
}
