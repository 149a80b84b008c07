/* redlock.pml - redlock's protocol as SPIN sees it (NOTES.md §13).
 *
 * Masters run each script atomically: the lock key of ONE resource (free,
 * a client's token, that token marked by a waiter's join, or a reservation
 * for a waiter), its fence counter, its
 * queue of waiters and the memory marker. Clients talk to masters over one
 * FIFO channel per (client, master) connection; the single "net" process
 * delivers any non-empty channel's head at any time (delay, and reordering
 * across connections), and a fault may drop a connection (loss).
 *
 * Time is discrete: the clock process ticks. A tick counts down every
 * master's key ttl and window and every client's validity. A master's clock
 * may run fast: a key (or a window) may end up to D ticks early. A client's
 * validity is TTL - MARGIN ticks from the start of its attempt, so with
 * MARGIN = D no key it counted can expire while it believes it holds.
 *
 * Two configurations, chosen with -D:
 *   (default)  safety: faults, free ticks, bounded rounds; asserts mutual
 *              exclusion and the fence order.
 *   LIVE       liveness once faults stop: the last master down, no other
 *              fault, two clients wanting the lock again and again. Bounded
 *              delivery: each connection is its own process (weak fairness
 *              delivers every request eventually), a tick only when nothing
 *              else can move (a message is fast next to a tick), and an
 *              attempt gives up on its silent masters one tick after it
 *              started (the node timeout). Asserts no stuck resource (a
 *              waiter sees a holder within STUCK_MAX ticks) and the queue's
 *              order (a release serves the waiter queued on every live
 *              master before the releaser's next grant), and carries the
 *              LTL progress property (every waiter eventually holds).
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
#define CAP 2
#endif
#define CAP_                   /* requests in flight per connection */

mtype = { ACQ, FAST, CLEAN, REL, NREL, LEAVE, EXT, FENCE, LEASES, SETTLE };

#define FREE 0                  /* key values */
#define TOK(c) ((c) + 1)
#define MTOK(c) ((c) + 4)       /* c's token marked: a waiter joined while c held it */
#define RES(c) ((c) + 8)
#define IS_TOK(k) (((k) >= 1 && (k) <= NC) || ((k) >= 5 && (k) <= 4 + NC))
#define OWN(m, c) (key[m] == TOK(c) || key[m] == MTOK(c))

#define MK_NONE 0               /* the memory marker */
#define MK_PENDING 1            /* no window yet: refuses, asks for a settle */
#define MK_YOUNG 2              /* window running: refuses */
#define MK_SERVED 3             /* counts */
#define NOT_SERVED 255          /* a LEASES report from a non-served master */

#ifdef BROKEN_GUARD_OFF
#define TRUSTED(m) true
#else
#define TRUSTED(m) (mk[m] == MK_SERVED)
#endif
/* The fast path (acquire.c): a first attempt, no fence, is a transaction:
 * the marker's `served` read in the same step as the SET NX. The mistake:
 * trusting what the client last heard of the marker instead. */
#ifdef BROKEN_FAST_UNCHECKED
#define FAST_TRUSTED(m) true
#else
#define FAST_TRUSTED(m) TRUSTED(m)
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
                   :: else -> skip fi
#endif
#else
#define ENQUEUE(m, c) skip      /* acquires that do not wait: no queue */
#define DEQUEUE(m, c) skip
#define MARK(m) skip
#endif
#define BIT(i) (1 << (i))

/* ---- masters ---- */
byte key[NM], ttl[NM], fence[NM], queue[NM];
byte cut[NM];                   /* waiters whose lease a reservation cut to its own end */
byte mk[NM], mkrun[NM], win[NM], inc[NM];
bool mkdur[NM];                 /* the marker vouches its incarnation was AOF always */
bool up[NM];
bool conn[NC * NM];             /* connection open */
bool fresh[NC * NM];            /* its handshake has not run yet */
bool moved[NC * NM];            /* the client re-resolved the master's name to a new
                                   address: its next handshake (CHECK) makes the
                                   server there reborn, whatever its marker says */
chan ch[NC * NM] = [CAP] of { mtype, byte };
byte old[NC * NM];              /* requests ahead in the channel from rounds that ended */
bool lastold;                   /* the request being run is the last of those (DELIVER) */

/* ---- clients ---- */
byte v[NC], ve[NC];             /* validity left; an extend's, from its start */
bool hold[NC];                  /* the client believes it holds */
bool waiting[NC], woke[NC];
byte tkt[NC];                   /* queue ticket: smaller is earlier */
byte nok[NC], nno[NC], okm[NC], nom[NC], pend[NC], fmax[NC];
byte nrep[NC], nns[NC], rmax[NC], nsm[NC];
byte pt[NC];                    /* poll timer */
byte dl[NC];                    /* live: ticks left before the attempt's node timeout */
byte fsnap[NC];                  /* largest granted fence when the attempt started */
byte hi;                        /* largest fence of any completed grant */
bool lost;                      /* some master lost or rolled back its counters */
byte nf;                        /* faults so far */
bool decided0;                  /* client 0's first attempt decided (STAGGER) */
byte stuck;                     /* live: ticks with a waiter and no holder */
byte owed;                      /* live: 1 + the waiter a release must serve next, or 0 */

/* The waiter with the earliest ticket in m's queue, or NC. */
inline head_of(m, h) {
    if
    :: (queue[m] & 1) && (!(queue[m] & 2) || tkt[0] < tkt[1]) -> h = 0
    :: (queue[m] & 2) && (!(queue[m] & 1) || tkt[1] < tkt[0]) -> h = 1
    :: else -> h = NC
    fi
}

/* A key that is freed goes to the queue's head as a reservation. */
/* A reservation cuts its waiter's lease to the reservation's end (script-
 * lua.h HAND_OVER); the waiter's next attempt renews it. A head whose cut
 * lease is still not renewed when the key is handed again let its
 * reservation lapse: its lease has ended, and it is dropped (a dead waiter
 * is reserved for once). */
inline hand_over(m, wake, h) {
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
       if :: !(ok) && nfull(ch[CH(c, m)]) -> ch[CH(c, m)]!LEAVE, 0 :: else -> skip fi \
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

/* One script on master m, from client c: atomic, as Redis runs it. */
inline exec(c, m, k, a, x, h) {
    if
    :: fresh[CH(c, m)] ->   /* the handshake runs before the connection's first request */
        fresh[CH(c, m)] = 0;
#if !defined(BROKEN_GUARD_OFF) && !defined(BROKEN_MOVE_TRUSTED)
        if
        :: moved[CH(c, m)] ->   /* CHECK's 'moved': reborn, as a restart that kept nothing */
            mk[m] = MK_PENDING; mkrun[m] = inc[m]; win[m] = 0; mkdur[m] = 0;
            printf("MSC: client %d reaches master %d at its new address: reborn\n", c, m)
        :: else -> skip
        fi;
#endif
        moved[CH(c, m)] = 0;
#ifndef BROKEN_GUARD_OFF
        if
        :: mk[m] == MK_NONE -> mk[m] = MK_PENDING; mkrun[m] = inc[m]
        :: mk[m] != MK_NONE && mkrun[m] != inc[m] ->
#ifdef BROKEN_TRUST_SNAPSHOT
            mkrun[m] = inc[m]               /* the bug: the marker as found */
#else
            if
            :: mkdur[m] -> mkrun[m] = inc[m]        /* adopt: AOF always */
            :: else -> mk[m] = MK_PENDING; mkrun[m] = inc[m]; win[m] = 0
            fi
#endif
        :: else -> skip
        fi
#endif
        skip
    :: else -> skip
    fi;
    if
    :: k == ACQ ->
        if
#ifndef BROKEN_GUARD_OFF
        :: mk[m] == MK_NONE ->              /* FLUSHALL: stamp, refuse */
            mk[m] = MK_PENDING; mkrun[m] = inc[m]; mkdur[m] = 0;
            vote(c, m, a, 0); if :: a -> pend[c] = pend[c] | BIT(m) :: else -> skip fi
        :: mk[m] == MK_PENDING || mk[m] == MK_YOUNG ->
            vote(c, m, a, 0); if :: a -> pend[c] = pend[c] | BIT(m) :: else -> skip fi
#endif
        :: TRUSTED(m) ->
            if
            :: key[m] == FREE || key[m] == RES(c) ->
                key[m] = TOK(c); ttl[m] = TTL;
#ifdef FENCED
                fence[m]++;
#endif
                DEQUEUE(m, c);
                printf("MSC: master %d grants client %d (fence %d)\n", m, c, fence[m]);
                vote(c, m, a, 1)
            :: else ->
                ENQUEUE(m, c);                      /* waits its turn */
                MARK(m);
                printf("MSC: master %d refuses client %d: queued\n", m, c);
                vote(c, m, a, 0)
            fi
        fi
    :: k == FAST ->     /* HGET served; SET NX PX; ZADD: no queue, no stamp */
        if
        :: key[m] == FREE ->
            key[m] = TOK(c); ttl[m] = TTL;
            printf("MSC: master %d sets client %d's key (fast path)\n", m, c)
        :: else -> skip
        fi;
        /* EXISTS queue, in the same step: a lease granted with nobody
         * queued may be released without Lua (the client learns it from
         * the reply, on time or late: fq). Only where clients wait: else
         * no fleet has the command (nat) and fq would be state read by
         * nothing. */
#if defined(LIVE) || defined(WAITQ)
        if :: key[m] == TOK(c) && queue[m] == 0 -> fq[c] = fq[c] | BIT(m) :: else -> skip fi;
#endif
        /* a fresh token per attempt: c's old lease, marked, is not this one */
        if
        :: key[m] == TOK(c) && FAST_TRUSTED(m) -> DEQUEUE(m, c); vote(c, m, a, 1)
        :: key[m] == TOK(c) && !FAST_TRUSTED(m) ->
            /* not served: no vote, though the key may be ours (the cleanup
             * removes it: not a "no" that wrote nothing); the client checks
             * the marker (CHECK) and settles a master found pending */
            if :: a -> nno[c]++; pend[c] = pend[c] | BIT(m) :: else -> skip fi
        :: else -> vote(c, m, a, 0)
        fi
    :: k == CLEAN ->    /* a failed attempt's cleanup: keep the place, hand quietly */
        ENQUEUE(m, c);
        if
        :: OWN(m, c) ->
#ifdef BROKEN_CLEANUP_FREES
            key[m] = FREE; ttl[m] = 0
#else
            hand_over(m, 0, h)
#endif
        :: else -> skip
        fi
    :: k == REL ->
        if
        :: OWN(m, c) ->
#ifdef BROKEN_RELEASE_FREES
            key[m] = FREE; ttl[m] = 0           /* no hand-over: first come, first served */
#else
            hand_over(m, 1, h)
#endif
        :: else -> skip
        fi
    :: k == NREL ->     /* the release without Lua: ZREM; DELIFEQ key token (pipelined) */
        if
        :: key[m] == TOK(c) -> key[m] = FREE; ttl[m] = 0
        :: key[m] == MTOK(c) ->
            /* marked: the delete's compare fails, and the same connection
             * sends the script (fanout.c's redo), behind whatever the
             * client queued there since; a full channel loses it as a
             * dropped connection would */
            printf("MSC: master %d: client %d's key is marked: the script follows\n", m, c);
            if :: nfull(ch[CH(c, m)]) -> ch[CH(c, m)]!REL, 0 :: else -> skip fi
        :: else -> skip /* gone or another's: the script follows too (the
                           delete's 0 does not say why), compares this
                           lease's token, and changes nothing */
        fi
    :: k == LEAVE ->    /* done waiting: leave the queue, pass a reservation on */
        DEQUEUE(m, c);
        if :: key[m] == RES(c) -> hand_over(m, 1, h) :: else -> skip fi
    :: k == EXT ->      /* the script, or (a master with SET IFEQ) the transaction */
        if
        :: OWN(m, c) && EXT_TRUSTED(m) -> ttl[m] = TTL; vote(c, m, a, 1)
        :: OWN(m, c) && !EXT_TRUSTED(m) ->
            /* not served: the script writes nothing; the transaction
             * (HGET served; GET; SET IFEQ PX; ZADD GT) cannot refuse to
             * write and extends our own key. Neither vote counts. */
            if :: ttl[m] = TTL :: skip fi;
            vote(c, m, a, 0)
        :: else -> vote(c, m, a, 0)
        fi
    :: k == FENCE ->
        if :: x > fence[m] -> fence[m] = x :: else -> skip fi;
        vote(c, m, a, 1)
    :: k == LEASES ->
        if
        :: a ->
            nrep[c]++;
            if
            :: !TRUSTED(m) -> nns[c]++; nsm[c] = nsm[c] | BIT(m)
            :: TRUSTED(m) && IS_TOK(key[m]) && ttl[m] > rmax[c] -> rmax[c] = ttl[m]
            :: else -> skip
            fi
        :: else -> skip
        fi
    :: k == SETTLE ->
        if
        :: mk[m] == MK_PENDING -> mk[m] = MK_YOUNG; win[m] = x;
            printf("MSC: master %d settled, window %d\n", m, x);
            if :: x == 0 -> mk[m] = MK_SERVED :: else -> skip fi
        :: else -> skip
        fi
    fi
}

/* Queue a request; a full channel or a master that is down loses it. */
inline send(c, m, k, a, x) {
    if
    :: !up[m] -> skip
    :: up[m] && !conn[CH(c, m)] && empty(ch[CH(c, m)]) ->
        conn[CH(c, m)] = 1; fresh[CH(c, m)] = 1; ch[CH(c, m)]!k, x
    :: up[m] && conn[CH(c, m)] && nfull(ch[CH(c, m)]) -> ch[CH(c, m)]!k, x
    :: up[m] && conn[CH(c, m)] && full(ch[CH(c, m)]) -> skip
    fi
}

inline send_all(c, k, a, x, m) {
    m = 0;
    do
    :: m < NM -> send(c, m, k, a, x); m++
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
    m = 0;
    do
    :: m < NM -> if
                 :: fast && nat && ((fq[c] | gq[c]) & BIT(m)) -> send(c, m, NREL, 0, 0)
                 :: else -> send(c, m, REL, 0, 0)
                 fi;
                 m++
    :: else -> m = 0; break
    od
}

/* Every master the attempt may have written to: not those that said no. */
inline cleanup(c, m) {
    m = 0;
    do
    :: m < NM -> if :: !(nom[c] & BIT(m)) -> send(c, m, CLEAN, 0, 0) :: else -> skip fi; m++
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
    pend[c] = 0; fmax[c] = 0
}

inline drop_conn(i) {
    do
    :: nempty(ch[i]) -> ch[i]?_, _
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
    :: atomic { up[m] && nempty(ch[CH(c, m)]) -> ch[CH(c, m)]?k, x; \
                if :: old[CH(c, m)] > 0 -> old[CH(c, m)]--; a = 0; lastold = (old[CH(c, m)] == 0) \
                   :: else -> a = 1 fi; \
                exec(c, m, k, a, x, h); k = 0; a = 0; x = 0; lastold = 0 }

#ifndef LIVE
proctype net() {
    mtype k; byte a, x, h;
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
    mtype k; byte a, x, h;
end:
    do
    DELIVER(c, m)
    od
}
#endif

/* ---- time ---- */
inline tick(i) {
    i = 0;
    do
    :: i < NM ->
        if :: ttl[i] > 0 -> ttl[i]--; if :: ttl[i] == 0 -> key[i] = FREE :: else -> skip fi
           :: else -> skip fi;
        if :: mk[i] == MK_YOUNG -> win[i]--; if :: win[i] == 0 -> mk[i] = MK_SERVED :: else -> skip fi
           :: else -> skip fi;
        i++
    :: else -> break
    od;
    i = 0;
    do
    :: i < NC ->
        if :: v[i] > 0 -> v[i]--; if :: v[i] == 0 -> hold[i] = 0 :: else -> skip fi
           :: else -> skip fi;
        if :: ve[i] > 0 -> ve[i]-- :: else -> skip fi;
        if :: pt[i] > 0 -> pt[i]-- :: else -> skip fi;
        if :: dl[i] > 0 -> dl[i]-- :: else -> skip fi;
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
    :: atomic { ttl[m] > 0 && ttl[m] <= D -> ttl[m] = 0; key[m] = FREE; \
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
    :: atomic { printf("MSC: tick\n"); tick(i) }
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
    :: m < NM -> if :: mask & BIT(m) -> send(c, m, k, 0, x) :: else -> skip fi; m++
    :: else -> m = 0; break
    od
}
#define ALL (BIT(NM) - 1)

#ifndef LIVE
/* ---- master faults (at most FAULTS) ----
 * FAULT_KIND picks one kind (0 restart, nothing kept; 1 older snapshot;
 * 2 AOF always; 3 FLUSHALL; 4 a lost connection; 5 the master's name
 * moves onto a server whose marker counts); 9, all of them. */
#ifndef FAULT_KIND
#define FAULT_KIND 9
#endif
#define FK(n) (FAULT_KIND == (n) || FAULT_KIND == 9)
inline drop_conns(m, i) {
    i = 0;
    do
    :: i < NC -> drop_conn(CH(i, m)); i++
    :: else -> i = 0; break
    od
}

proctype faults() {
    byte m, i;
end:
    do
    :: nf < FAULTS -> atomic {
        nf++;
        /* masters are alike: the first fault hits master 0, a second 0 or 1 */
        if :: m = 0 :: nf > 1 -> m = 1 fi;
        if
        :: FK(0) -> printf("MSC: master %d restarts, nothing kept\n", m);
            inc[m]++; key[m] = FREE; ttl[m] = 0; fence[m] = 0; queue[m] = 0;
            mk[m] = MK_NONE; win[m] = 0; mkdur[m] = 0; lost = 1; drop_conns(m, i)
        :: FK(1) -> printf("MSC: master %d restarts from an older snapshot (marker %d kept, lock key lost)\n", m, mk[m]);
            inc[m]++; key[m] = FREE; ttl[m] = 0; mkdur[m] = 0;
            if :: fence[m] = 0; lost = 1 :: skip fi;
            drop_conns(m, i)
        :: FK(2) -> printf("MSC: master %d restarts with everything kept (AOF always)\n", m);
            inc[m]++; mkdur[m] = 1; drop_conns(m, i)
        :: FK(3) -> printf("MSC: master %d FLUSHALL\n", m);
            key[m] = FREE; ttl[m] = 0; fence[m] = 0; queue[m] = 0;
            mk[m] = MK_NONE; win[m] = 0; lost = 1
        :: FK(5) -> printf("MSC: master %d's name moves onto a server that counts (key, queue, fence lost)\n", m);
            /* The old server is stopped for good (the operator's rule):
             * every connection drops, and each client's next one goes
             * to the new server, knowing that the address changed. Its
             * marker is its own process's, served: it would count. */
            inc[m]++; key[m] = FREE; ttl[m] = 0; fence[m] = 0; queue[m] = 0;
            mk[m] = MK_SERVED; mkrun[m] = inc[m]; win[m] = 0; mkdur[m] = 0; lost = 1;
            drop_conns(m, i); moved[CH(0, m)] = 1; moved[CH(1, m)] = 1
        :: FK(4) -> printf("MSC: client 0's connection to master %d drops\n", m); drop_conn(CH(0, m))
        :: FK(4) -> printf("MSC: client 1's connection to master %d drops\n", m); drop_conn(CH(1, m))
        fi;
        m = 0 }
    :: else -> break
    od
}

/* ---- a client: ROUNDS waiting attempts; holds, extends, releases ---- */
#ifdef FENCED
#define WON_FAST(r) 0           /* a fenced acquire never takes the fast path */
#else
#define WON_FAST(r) ((r) == 1)  /* the first attempt is the fast path */
#endif
proctype client(byte c) {
    byte m, r, e, s, w, okl, nol, pl, fm;
    bool won;
    do
    :: r < ROUNDS(c) ->
#ifdef STAGGER
        (c == 0 || decided0);       /* client 1 starts once client 0 decided */
#endif
        r++;
        atomic {
            new_round(c); fsnap[c] = hi; v[c] = TTL - MARGIN; waiting[c] = 1; fq[c] = 0; gq[c] = 0;
            printf("MSC: client %d attempt %d starts\n", c, r);
            if :: r == 1 -> send_all(c, FIRST, 0, 0, m) :: else -> send_all(c, ACQ, 0, 0, m) fi
        }
        /* decided at the quorum-th OK, or before it: held or refused by
         * enough masters, or the node timeout (any time: a faster timeout
         * is only a different schedule) */
        atomic {
            okl = okm[c]; nol = nom[c]; pl = pend[c]; fm = fmax[c];
            if :: nok[c] >= Q -> won = 1 :: nok[c] < Q -> won = 0 fi;
            decided0 = 1
        }
#if defined(FENCED) && !defined(BROKEN_NO_WRITEBACK)
        if
        :: won ->       /* fence write-back: counter = max(counter, t), a majority acks */
            atomic { new_round(c); send_all(c, FENCE, 0, fm, m) };
            atomic { if :: nok[c] >= Q -> won = 1 :: nok[c] < Q -> won = 0 fi }
        :: else -> skip
        fi;
#endif
        if
        :: atomic { won && v[c] > 0 ->
            printf("MSC: client %d holds (fence %d, validity %d)\n", c, fm, v[c]);
            assert(!hold[OTHER(c)]);                /* mutual exclusion */
#if defined(BROKEN_FENCE_WITHOUT_AOF)
            assert(fm > fsnap[c]);
#elif defined(FENCED)
            assert(lost || fm > fsnap[c]);           /* fences grow (counters kept) */
#endif
            if :: fm > hi -> hi = fm :: else -> skip fi;
            hold[c] = 1; waiting[c] = 0;
#ifdef WAITQ
            /* the guess (gq): the fast path won and every answer was a
             * grant with nobody queued */
            if :: WON_FAST(r) && (nol | pl | (okl & ~fq[c])) == 0 -> gq[c] = ALL & ~okl
               :: else -> skip fi;
            /* leave where refused; where still to answer, if it refuses */
            lf[c] = ALL & ~okl & ~nol; new_round(c); send_mask(c, nol, LEAVE, 0, m);
#endif
            skip }
            do
            :: atomic { hold[c] && e < EXTS -> e++; new_round(c); ve[c] = TTL - MARGIN;
                        send_all(c, EXT, 0, 0, m) };
               atomic { if
                        :: nok[c] >= Q && hold[c] && ve[c] > 0 -> v[c] = ve[c];
                           printf("MSC: client %d extended (validity %d)\n", c, v[c])
                        :: else -> skip
                        fi }
            :: atomic { hold[c] -> hold[c] = 0; v[c] = 0; new_round(c);
                        printf("MSC: client %d releases\n", c);
                        send_release(c, WON_FAST(r), m) }; break
            :: !hold[c] -> break                    /* paused past its validity */
            od
        :: atomic { else ->
            printf("MSC: client %d attempt %d fails, cleans up\n", c, r);
            new_round(c); send_mask(c, ALL & ~nol, CLEAN, 0, m) }
            if
            :: pl != 0 && s < SETTLES ->            /* a master waits for its window */
                s++;
                atomic { new_round(c); nrep[c] = 0; nns[c] = 0; rmax[c] = 0; nsm[c] = 0;
                         send_all(c, LEASES, 0, 0, m) };
                atomic {
                    if
                    :: nrep[c] == NM && nns[c] < Q -> w = rmax[c] + D
#ifdef BROKEN_SETTLE_QUORUM
                    :: nrep[c] < NM && nrep[c] >= Q && nns[c] < Q -> w = rmax[c] + D
#endif
                    :: else -> w = TTL              /* the fleet's longest ttl */
                    fi;
                    printf("MSC: client %d settles with window %d (%d reports)\n", c, w, nrep[c]);
                    m = 0;
                    do
                    :: m < NM -> if :: (nsm[c] & BIT(m)) && conn[CH(c, m)] ->
                                       send(c, m, SETTLE, 0, w)
                                    :: else -> skip fi; m++
                    :: else -> m = 0; break
                    od;
                    w = 0 }
            :: else -> skip
            fi
        fi;
        okl = 0; nol = 0; pl = 0; fm = 0; won = 0
    :: else -> break
    od;
#ifdef WAITQ
    atomic { waiting[c] = 0; new_round(c); send_all(c, LEAVE, 0, 0, m) }
#endif
}

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

proctype client(byte c) {
    byte m, okl;
    bool first, wf;
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
        if
        :: atomic { nok[c] >= Q && v[c] > 0 ->
            assert(!hold[OTHER(c)]);
            assert(owed != OTHER(c) + 1);           /* the head is served first */
            printf("MSC: client %d holds\n", c);
            hold[c] = 1; waiting[c] = 0; stuck = 0; owed = 0; okl = okm[c]; wf = first;
            /* the guess (gq): the fast path won and every answer was a
             * grant with nobody queued */
            if :: first && (nom[c] | pend[c] | (okl & ~fq[c])) == 0 -> gq[c] = ALL & ~okl
               :: else -> skip fi;
#if defined(LIVE) || defined(WAITQ)
            /* leave where the attempt was refused now, where it is still
             * to answer when the answer says so (LATE_LEAVE) */
            lf[c] = ALL & ~okl & ~nom[c]; okl = nom[c];
            new_round(c); send_mask(c, okl, LEAVE, 0, m); okl = 0 }
#else
            new_round(c); send_mask(c, ALL & ~okl, LEAVE, 0, m); okl = 0 }
#endif
        /* lost: the code waits for every master's answer, then cleans up
         * only where the attempt may have written (not where it was
         * refused); a master still silent fails at the node timeout and is
         * cleaned up blind. Here the decision may come once a majority
         * refused, the others silent: the node timeout, which may come at
         * any time (time passes here only when nothing else can move, so
         * a wait for it would let the other client loop forever). */
        :: atomic { (nok[c] < Q && (nno[c] > NM - Q || dl[c] == 0)) || (nok[c] >= Q && v[c] == 0) ->
            printf("MSC: client %d attempt fails, cleans up\n", c);
            okl = nom[c]; new_round(c); send_mask(c, ALL & ~okl, CLEAN, 0, m); okl = 0;
            /* the first attempt (no place in the queues) tries again at
             * once, taking its place */
            if :: first -> pt[c] = 0; first = 0 :: else -> pt[c] = POLL fi };
            (pt[c] == 0 || woke[c]);
            goto again
        fi;
        atomic { hold[c] = 0; v[c] = 0; new_round(c);
                 printf("MSC: client %d releases\n", c);
                 /* the other waits in every live master's queue: it is
                  * the head everywhere, and this release's hand-over is its */
                 if
                 :: waiting[OTHER(c)] && QUEUED_LIVE(OTHER(c)) -> owed = OTHER(c) + 1;
                    printf("MSC: client %d waits in every live queue: it is next\n", OTHER(c))
                 :: else -> skip
                 fi;
                 send_release(c, wf, m); wf = 0 }
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
        :: i < NM -> up[i] = 1; mk[i] = MK_SERVED; i++     /* declared empty */
        :: else -> break
        od;
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
        run clock(); run client(0); run client(1)
    }
}
