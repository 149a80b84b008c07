/* script.c - the Lua scripts every master runs, and their SHA1 digests.
 *
 * Whatever must be decided and done in one step on a master is a script:
 * Redis runs a script atomically. Release and extend compare the token and
 * act (a GET then a DEL from the client could delete a lock that expired
 * and was taken by someone else in between); acquire checks the master's
 * memory marker, the hand-off reservation and the waiters' queue together
 * with the SET; status reads value and ttl at one instant.
 *
 * The digests are computed locally, so EVALSHA can be sent before any
 * SCRIPT LOAD reply; a master that answers NOSCRIPT (restarted, or SCRIPT
 * FLUSH) gets the same script again as EVAL (fanout.c).
 *
 * Keys a lock uses on each master (K = key prefix + resource):
 *   K            the lock: a token, or a reservation "\1" + waiter (below)
 *   K "\0fence"  its fencing counter before one counter served every
 *                resource: read (a fence never goes below it) and kept
 *                in step while it exists, never created
 *   K "\0q"      the waiters' queue: a sorted set, member = waiter, score =
 *                the time the waiter started waiting (its ticket)
 *   K "\0l"      the same members, score = when the waiter's lease ends
 *   "\0redlock:marker"  the master's memory marker: a hash with no ttl
 *                {born, window, maxttl, served, run, durable, pending,
 *                tight, cause} (CHECK, HEARD; NOTES.md §4)
 *   "\0redlock:fence"   the master's fencing counter, for every resource
 *   "\0redlock:held"    the lock keys this master granted while it was
 *                trusted, scored by when their leases end (a sorted set),
 *                so that the fleet can tell how long the leases live now
 *                when a master forgets (LEASES)
 * A NUL cannot be part of a resource name or of the prefix, so none of these
 * can ever be another resource's lock key.
 *
 * A waiter is "hand|channel|id": how long a reservation for it may wait
 * (ms), the pub/sub channel of its client, and its id there.
 */
#include "script.h"
#include "common.h"

#include <openssl/sha.h>
#include <pthread.h>
#include <string.h>

/* From here to the end of bodies[], the Lua is laid out as Lua: one line of
 * it per C string, the pieces (NOW_MS, QUEUE_OK, ...) one per line where a
 * body takes them, and the macros' backslashes aligned by hand. clang-format
 * would pack strings and piece names onto shared lines: it is kept out. */
/* clang-format off */

/* The master's own time in ms, for the marker and for leases. Scripts are
 * replicated by their effects (Redis >= 5 default, the only mode of 7), so
 * TIME may come before writes. */
#define NOW_MS "local t = redis.call('time')\n" \
               "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"

/* Are q and l usable as a queue and its leases? False when there is no
 * queue (nothing to do), or when either key holds another type: then both
 * are deleted (the waiters still alive join again, with their old tickets,
 * at their next attempt) and the master's log names the key. */
#define QUEUE_OK                                                               \
    "local function drop_queue(q, l, bad)\n"                                   \
    "  redis.log(redis.LOG_WARNING, 'redlock: deleted ' .. string.gsub(bad, '%z', '\\\\0') ..\n" \
    "            ' (a waiters\\' queue key of type ' .. redis.call('type', bad).ok .. ')')\n" \
    "  redis.call('del', q, l)\n"                                              \
    "end\n"                                                                    \
    "local function queue_ok(q, l)\n"                                          \
    "  local tq = redis.call('type', q).ok\n"                                  \
    "  if tq == 'none' then return false end\n"                                \
    "  if tq ~= 'zset' then drop_queue(q, l, q) return false end\n"            \
    "  local tl = redis.call('type', l).ok\n"                                  \
    "  if tl == 'zset' or tl == 'none' then return true end\n"                 \
    "  drop_queue(q, l, l)\n"                                                  \
    "  return false\n"                                                         \
    "end\n"

/* Hand K (ARGV-free: i, n) to its first live waiter, or delete it (and
 * take it out of the index of held keys `idx`, if given): drop waiters
 * whose lease ended, reserve K for the head for as long as its reservation
 * may wait, and, if `wake`, tell it on its client's channel. A failed
 * attempt's cleanup hands over quietly: the head finds the reservation at
 * its next poll, well within the reservation's life, and no cleanup ever
 * wakes anyone (waking at every failed attempt is the herd this queue
 * exists to avoid). Without a queue (the common case) it is a DEL: the
 * queue's type is checked first so that an uncontended release costs the
 * master three calls.
 *
 * Only a live waiter is reserved for: a head that is not a waiter's name
 * ("hand|redlock:wake:<hex>|<hex>") or has no lease entry ending later is
 * dropped here, so garbage in the queue costs one release a ZREM, never a
 * reservation that nobody can take. Reserving cuts the head's lease to the
 * reservation's end: a live waiter renews it with its next attempt (its
 * poll comes before the reservation lapses, by construction), a dead one
 * is dropped by the next hand-off instead of being reserved for again
 * until its old lease ends. A queue or lease key of another type is ours
 * (K "\0q" is no one else's name) and garbage: it is deleted, and the
 * master's log names it. At most 64 heads are dropped per call; past
 * that the key is simply freed. */
#define HAND_OVER                                                              \
    "local function hand_over(i, n, by, wake, idx)\n"                          \
    "  local q, l = KEYS[n + i], KEYS[2 * n + i]\n"                            \
    "  local function free() redis.call('del', KEYS[i])\n"                    \
    "    if idx then redis.call('zrem', idx, KEYS[i]) end end\n"             \
    "  if not queue_ok(q, l) then free() return end\n"                       \
    "  " NOW_MS                                                               \
    "  for _, w in ipairs(redis.call('zrangebyscore', l, '-inf', now)) do\n"  \
    "    redis.call('zrem', q, w) redis.call('zrem', l, w)\n"                  \
    "  end\n"                                                                  \
    "  for _ = 1, 64 do\n"                                                     \
    "    local head = redis.call('zrange', q, 0, 0)[1]\n"                      \
    "    if not head then break end\n"                                         \
    "    local hand, chan = string.match(head, '^(%d+)|(redlock:wake:%x+)|%x+$')\n" \
    "    local lease = tonumber(redis.call('zscore', l, head))\n"               \
    "    hand = tonumber(hand)\n"                                              \
    "    if hand and hand > 0 and hand <= 2147483647 and lease and lease > now then\n" \
    "      redis.call('set', KEYS[i], '\\1' .. head, 'PX', hand)\n"            \
    "      if lease > now + hand then redis.call('zadd', l, 'XX', now + hand, head) end\n" \
    "      if wake then redis.call('publish', chan, head .. '|' .. by) end\n"   \
    "      return\n"                                                           \
    "    end\n"                                                                \
    "    redis.call('zrem', q, head) redis.call('zrem', l, head)\n"            \
    "  end\n"                                                                  \
    "  free()\n"                                                               \
    "end\n"

/* Waiter w takes its place (its ticket; kept if it has one) in queue q and
 * its lease in l is renewed; both sets outlive the lease. The ZADDs are
 * tried with pcall so that the common case costs no TYPE call: a queue key
 * of another type is dropped (QUEUE_OK) and the place taken again in the
 * new sets (both, since dropping one drops the other). */
#define JOIN                                                                   \
    "local function join(q, l, w, ticket, lease)\n"                            \
    "  " NOW_MS                                                               \
    "  local function bad(r) return type(r) == 'table' and r.err end\n"        \
    "  if bad(redis.pcall('zadd', q, 'NX', ticket, w)) then\n"                 \
    "    drop_queue(q, l, q) redis.call('zadd', q, 'NX', ticket, w)\n"          \
    "  end\n"                                                                  \
    "  if bad(redis.pcall('zadd', l, now + lease, w)) then\n"                  \
    "    drop_queue(q, l, l) redis.call('zadd', q, 'NX', ticket, w)\n"          \
    "    redis.call('zadd', l, now + lease, w)\n"                              \
    "  end\n"                                                                  \
    "  redis.call('pexpire', q, 2 * lease) redis.call('pexpire', l, 2 * lease)\n" \
    "end\n"

/* The marker at KEYS[mk] hears of a ttl `want` in use, and says whether
 * this master's vote may count. The fleet's longest ttl (maxttl, the bound
 * for a window nobody could measure) is raised to `want`; so is a window
 * still running that was set from that bound (a `tight` window was measured
 * from every master's live leases and needs no raise). Returns nil without
 * a marker; else maxttl and: nil (it counts), -1 (its memory is lost and
 * its window not settled yet: `pending`), or the marker's age (and its
 * window) while the window runs on the master's own clock. `served` records that the window
 * has passed, so a trusted master answers with one HMGET and no TIME. Who
 * the master is (its run_id) was checked when the connection was made
 * (CHECK), before any vote on it: a marker here is this process's own. */
#define HEARD                                                                   \
    "local function heard(mk, want)\n"                                          \
    "  local m = redis.call('hmget', KEYS[mk], 'maxttl', 'served', 'pending', 'tight')\n" \
    "  if not m[1] and redis.call('exists', KEYS[mk]) == 0 then return nil end\n" \
    "  local maxttl = tonumber(m[1]) or 0\n"                                    \
    "  if want > maxttl then maxttl = want redis.call('hset', KEYS[mk], 'maxttl', want) end\n" \
    "  if m[2] then return maxttl, nil end\n"                                   \
    "  if m[3] then return maxttl, -1 end\n"                                    \
    "  " NOW_MS                                                                 \
    "  local b = redis.call('hmget', KEYS[mk], 'born', 'window')\n"             \
    "  local age, window = now - (tonumber(b[1]) or 0), tonumber(b[2]) or 0\n"  \
    "  if age >= window then redis.call('hset', KEYS[mk], 'served', 1) return maxttl, nil end\n" \
    "  if want > window and not m[4] then window = want redis.call('hset', KEYS[mk], 'window', want) end\n" \
    "  return maxttl, math.max(age, 0), window\n"                               \
    "end\n"

/* A master whose marker is gone lost its data (FLUSHALL, eviction, a
 * restart without persistence): it is reborn, pending until a client
 * measures how long the leases it may have granted can still live. */
#define RUN_ID                                                                  \
    "local function run_id()\n"                                                \
    "  return string.match(redis.call('info', 'server'), 'run_id:(%x+)') or ''\n" \
    "end\n"

#define REBORN                                                                  \
    "local function reborn(mk, maxttl, cause, run)\n"                           \
    "  " NOW_MS                                                                 \
    "  redis.call('hset', KEYS[mk], 'born', now, 'window', 0, 'maxttl', maxttl, 'pending', 1,\n" \
    "             'cause', cause, 'run', run)\n"                                \
    "  redis.call('hdel', KEYS[mk], 'served', 'durable', 'tight')\n"            \
    "end\n"

/* Keys KEYS[first..first+n-1], just granted with `ttl`, join the index of
 * held keys KEYS[ik], scored by when their lease ends on this master's
 * clock (PEXPIRETIME: no TIME call); entries whose lease ended before now
 * (the grant's own time: its end minus its ttl) leave it, so the index
 * holds the live leases and never the history. The index names keys and
 * never reads them: a user whose ACL covers one key prefix can keep it. */
#define INDEX                                                                   \
    "local function index(ik, first, n, ttl)\n"                                 \
    "  local e = 0\n"                                                          \
    "  for i = first, first + n - 1 do\n"                                       \
    "    e = redis.call('pexpiretime', KEYS[i])\n"                               \
    "    redis.call('zadd', KEYS[ik], e, KEYS[i])\n"                             \
    "  end\n"                                                                  \
    "  redis.call('zremrangebyscore', KEYS[ik], '-inf', '(' .. (e - ttl))\n"     \
    "end\n"

static const char *const bodies[RL_SCRIPT_COUNT] = {
    /* Release. KEYS: n locks, their n queues, their n lease sets, then the
     * index of held keys (a key deleted here leaves it).
     * ARGV[1] the value to remove (a token; for a waiter that gives up, its
     * reservation "\1" .. waiter), ARGV[2] '1' to hand each key to its next
     * waiter and wake it, '0' to hand over quietly (a failed attempt's
     * cleanup), ARGV[3] a waiter (or ''): with ARGV[4] ''
     * it leaves the queues (it gives up); with ARGV[4] its ticket and
     * ARGV[5] its lease it keeps its place there (the cleanup of its failed
     * attempt, which may have been granted, and so dequeued, here). A plain
     * release sends ARGV[1] alone (hand over and wake, no waiter): every
     * argument costs the master a Lua string, and this is the common call. Returns
     * -1 if any key holds another value (we had lost it), 1 if we removed
     * something, 0 if everything was already gone. */
    [RL_SCRIPT_RELEASE] =
        /* The common case first, before any function below is made: one
         * lock, no waiter, nobody queued (a DEL and the index, three calls
         * and the compare). What it returns is what the rest would. */
        "if #KEYS == 4 and #ARGV == 1 then\n"
        "  local v = redis.call('get', KEYS[1])\n"
        "  if v ~= ARGV[1] then if v then return -1 end return 0 end\n"
        "  if redis.call('exists', KEYS[2]) == 0 then\n"
        "    redis.call('del', KEYS[1]) redis.call('zrem', KEYS[4], KEYS[1]) return 1\n"
        "  end\n"
        "end\n"
        QUEUE_OK
        HAND_OVER
        JOIN
        "local n = math.floor(#KEYS / 3)\n"
        "local idx = KEYS[3 * n + 1]\n"
        "local mine, other = 0, 0\n"
        "local waiter, wake = ARGV[3] or '', (ARGV[2] or '1') == '1'\n"
        "local stays = waiter ~= '' and (ARGV[4] or '') ~= ''\n"
        "for i = 1, n do\n"
        "  if stays then\n"
        "    join(KEYS[n + i], KEYS[2 * n + i], waiter, ARGV[4], tonumber(ARGV[5]))\n"
        "  elseif waiter ~= '' then\n"
        "    redis.pcall('zrem', KEYS[n + i], waiter) redis.pcall('zrem', KEYS[2 * n + i], waiter)\n"
        "  end\n"
        "  local v = redis.call('get', KEYS[i])\n"
        "  if v == ARGV[1] then\n"
        "    mine = mine + 1\n"
        "    hand_over(i, n, ARGV[1], wake, idx)\n"
        "  elseif v ~= false then other = other + 1 end\n"
        "end\n"
        "if other > 0 then return -1 end\n"
        "if mine > 0 then return 1 end\n"
        "return 0\n",
    /* Extend: all or nothing on this master. Only if every key still holds
     * our token; a key that is gone (0) or another's (-1) extends nothing,
     * so extend never resurrects a lock. KEYS: n locks, then (ARGV[3] '1')
     * the memory marker and the index of held keys. The marker hears of the
     * new ttl first, and a master whose memory is not trusted extends
     * nothing (-2): a master that reloaded an old snapshot may hold our key
     * again, but its vote must not count towards a lease (NOTES.md §4). */
    [RL_SCRIPT_EXTEND] =
        HEARD
        "local n = #KEYS\n"
        "local marked = ARGV[3] == '1'\n"
        "if marked then\n"
        "  n = n - 2\n"
        "  local mt, age = heard(n + 1, tonumber(ARGV[2]))\n"
        "  if not mt or age then return -2 end\n"
        "end\n"
        "for i = 1, n do\n"
        "  local v = redis.call('get', KEYS[i])\n"
        "  if v == false then return 0 end\n"
        "  if v ~= ARGV[1] then return -1 end\n"
        "end\n"
        "for i = 1, n do\n"
        "  redis.call('pexpire', KEYS[i], ARGV[2])\n"
        "  if marked then\n"
        "    redis.call('zadd', KEYS[n + 2], redis.call('pexpiretime', KEYS[i]), KEYS[i])\n"
        "  end\n"
        "end\n"
        "return 1\n",
    [RL_SCRIPT_STATUS] =
        "return {redis.call('get', KEYS[1]), redis.call('pttl', KEYS[1])}\n",
    /* Acquire. KEYS: n locks, then (flag f) n old fence counters and the
     * master's fence counter, then (flag q)
     * n queues and n lease sets, then (flag m) the memory marker and the
     * index of held keys. ARGV: 1
     * token, 2 ttl, 3 n, 4 flags, 5 the waiter (flag q), 6 its ticket, 7 its
     * lease (ms), 8 the memory window the client asks for (its longest ttl,
     * the longest any master reported, restart_guard_ms).
     * Returns {status, fence or marker age, the marker's maxttl}: status 1
     * granted, 0 held (nothing written but the waiter's place in the
     * queue; the second element 1 if one of a set's keys is reserved for
     * this waiter: a wake-up for it was real, acquire.c; a fourth, the
     * waiter's rank in the first key's queue, 0 the head: how often it
     * polls), -2 this master's memory cannot be trusted yet (nothing
     * written; age -1: its window is not settled yet), and then a fourth
     * element, the window; -3 the fence counter of resource j (0-based,
     * the second element; j = n: the master's own) is garbage: not a
     * decimal integer below 10^18 (fourth element 0) or a key of another
     * type (1). Counters are checked before anything is written, and never
     * repaired: a counter reset would hand out a fence already used
     * (NOTES.md §5). The fence is the master's counter plus one, and above
     * any old per-resource counter, which is then set to it: a client of
     * before one counter per master still counts up from there.
     *
     * The marker: a master whose memory marker is missing has lost its
     * data (FLUSHALL, lost AOF files, an eviction; a restart is caught
     * earlier, by CHECK), so a lock it granted may still be live elsewhere:
     * it is reborn (REBORN) and votes for nobody until a client has settled
     * its window (SETTLE) and the window has passed on its own clock
     * (HEARD). Keys granted here join the index of held keys. A key may be set when it
     * is absent, or reserved for this very waiter (the hand-off); one key
     * and no queue is a bare SET NX, the uncontended case, and a refused
     * SET reads the key, so that a key of another type says WRONGTYPE at
     * once instead of "held". */
    [RL_SCRIPT_ACQUIRE] =
        HEARD
        RUN_ID
        REBORN
        INDEX
        QUEUE_OK
        JOIN
        "local n = tonumber(ARGV[3])\n"
        "local fenced = string.find(ARGV[4], 'f', 1, true)\n"
        "local queued = string.find(ARGV[4], 'q', 1, true)\n"
        "local k = n + 1\n"
        "local fk = k if fenced then k = k + n + 1 end\n"
        "local qk = k if queued then k = k + 2 * n end\n"
        "local maxttl = 0\n"
        "local marked = string.find(ARGV[4], 'm', 1, true)\n"
        "if marked then\n"
        "  local want = tonumber(ARGV[8])\n"
        "  local mt, age, window = heard(k, want)\n"
        "  if not mt then\n"
        "    reborn(k, want, 'lost', run_id())\n"
        "    return {-2, -1, want, 0}\n"
        "  end\n"
        "  maxttl = mt\n"
        "  if age then return {-2, age, maxttl, window or 0} end\n"
        "end\n"
        "if fenced then\n"
        "  for j = 0, n do\n"
        "    local v = redis.pcall('get', KEYS[fk + j])\n"
        "    if type(v) == 'table' then return {-3, j, maxttl, 1} end\n"
        "    if v and not (string.match(v, '^%d+$') and #v <= 18) then return {-3, j, maxttl, 0} end\n"
        "  end\n"
        "end\n"
        "if n == 1 and not queued then\n"
        "  if not redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then\n"
        "    redis.call('get', KEYS[1])\n"
        "    return {0, 0, maxttl}\n"
        "  end\n"
        "  if marked then index(k + 1, 1, 1, tonumber(ARGV[2])) end\n"
        "else\n"
        "  local mine = '\\1' .. ARGV[5]\n"
        "  for i = 1, n do\n"
        "    local v = redis.call('get', KEYS[i])\n"
        "    if v and not (queued and v == mine) then\n"
        "      if queued then\n"
        "        for j = 0, n - 1 do\n"
        "          join(KEYS[qk + j], KEYS[qk + n + j], ARGV[5], ARGV[6], tonumber(ARGV[7]))\n"
        "        end\n"
        "      end\n"
        "      local r, rank = 0, 0\n"
        "      for j = 1, n do if queued and j ~= i and redis.call('get', KEYS[j]) == mine then r = 1 end end\n"
        "      if queued then rank = redis.call('zrank', KEYS[qk], ARGV[5]) or 0 end\n"
        "      return {0, r, maxttl, rank}\n"
        "    end\n"
        "  end\n"
        "  for i = 1, n do redis.call('set', KEYS[i], ARGV[1], 'PX', ARGV[2]) end\n"
        "  if marked then index(k + 1, 1, n, tonumber(ARGV[2])) end\n"
        "  if queued then\n"
        "    for j = 0, n - 1 do\n"
        "      redis.pcall('zrem', KEYS[qk + j], ARGV[5]) redis.pcall('zrem', KEYS[qk + n + j], ARGV[5])\n"
        "    end\n"
        "  end\n"
        "end\n"
        "local f = 0\n"
        "if fenced then\n"
        "  f = redis.call('incr', KEYS[fk + n])\n"
        "  local old, top = {}, f\n"
        "  for j = 0, n - 1 do\n"
        "    old[j] = tonumber(redis.call('get', KEYS[fk + j]))\n"
        "    if old[j] and old[j] >= top then top = old[j] + 1 end\n"
        "  end\n"
        "  if top > f then f = top redis.call('set', KEYS[fk + n], f) end\n"
        "  for j = 0, n - 1 do if old[j] then redis.call('set', KEYS[fk + j], f) end end\n"
        "end\n"
        "return {1, f, maxttl}\n",
    /* Fence write-back: the master's counter (KEYS[1]) = max(counter,
     * ARGV[1]); so is every old per-resource counter that exists (the
     * rest of KEYS), none is created. */
    [RL_SCRIPT_FENCE] =
        "local f = tonumber(ARGV[1])\n"
        "for i = 1, #KEYS do\n"
        "  local v = redis.call('get', KEYS[i])\n"
        "  local c = tonumber(v or '0')\n"
        "  if (v or i == 1) and c and c < f then redis.call('set', KEYS[i], ARGV[1]) end\n"
        "end\n"
        "return 1\n",
    /* CHECK: run before any vote on a new connection (the handshake) and
     * at every probe. Who is this master? A Redis process has a run_id of
     * its own, new at every start; a marker belongs to the process that
     * wrote `run`. Another process's marker (a restart that reloaded RDB or
     * AOF, a promoted replica, a restore from backup) may have outlived
     * grants that the data it came with lacks, so the master is reborn
     * unless the marker vouches that the process before kept every write
     * (`durable`: AOF appendfsync always, VOUCH). No marker: reborn too. A
     * marker without `run` was written before run ids were kept (an older
     * redlock, or by hand): adopted only if this process loaded nothing
     * from disk when it started (no AOF, no keys from an RDB), so that the
     * marker was written while it ran; else it may come from a snapshot
     * older than a grant, and the master is reborn.
     * KEYS: the marker, the index of held keys (entries whose lease ended
     * leave it here: the fast path's grants never sweep it, acquire.c).
     * ARGV[1]: the longest ttl the client knows (a new marker's maxttl).
     * Returns {age, window, maxttl, state, cause, durable, now}: state 0 counts,
     * 1 its window runs, 2 pending (no window yet); cause 0, 1 lost its data
     * (no marker), 2 another process's marker; durable 1 if this process is
     * vouched for; now the master's clock (ms), from which the client
     * bounds the lease ends its fast path writes into the index. A served
     * marker reports its window as over, whatever the clock says since:
     * HEARD goes by the flag. */
    [RL_SCRIPT_MARKER] =
        RUN_ID
        REBORN
        "local run = run_id()\n"
        "local m = redis.call('hmget', KEYS[1], 'run', 'durable', 'maxttl')\n"
        "if redis.call('exists', KEYS[1]) == 0 then\n"
        "  reborn(1, tonumber(ARGV[1]) or 0, 'lost', run)\n"
        "elseif not m[1] then\n"
        "  local p = redis.call('info', 'persistence')\n"
        "  if string.match(p, 'aof_enabled:0') and string.match(p, 'rdb_last_load_keys_loaded:0\\r') then\n"
        "    redis.call('hset', KEYS[1], 'run', run)\n"
        "  else\n"
        "    reborn(1, tonumber(m[3]) or 0, 'restart', run)\n"
        "  end\n"
        "elseif m[1] ~= run then\n"
        "  if m[2] == m[1] then\n"
        "    redis.call('hset', KEYS[1], 'run', run) redis.call('hdel', KEYS[1], 'durable')\n"
        "  else\n"
        "    reborn(1, tonumber(m[3]) or 0, 'restart', run)\n"
        "  end\n"
        "end\n"
        NOW_MS
        "local f = redis.call('hmget', KEYS[1], 'born', 'window', 'maxttl', 'served', 'pending', 'cause',\n"
        "                     'durable')\n"
        "local age, window = now - (tonumber(f[1]) or 0), tonumber(f[2]) or 0\n"
        "local state = 0\n"
        "if f[5] then state = 2 elseif not f[4] and age < window then state = 1\n"
        "elseif not f[4] then redis.call('hset', KEYS[1], 'served', 1) end\n"
        "if f[4] and window > age then window = age end\n"
        "local cause = 0\n"
        "if f[6] == 'lost' then cause = 1 elseif f[6] == 'restart' then cause = 2 end\n"
        "local durable = 0\n"
        "if f[7] == run then durable = 1 end\n"
        "if redis.call('type', KEYS[2]).ok == 'zset' then\n"
        "  redis.call('zremrangebyscore', KEYS[2], '-inf', '(' .. now)\n"
        "end\n"
        "return {math.max(age, 0), window, tonumber(f[3]) or 0, state, cause, durable, now}\n",
    /* An operator declares a master new and empty: its marker counts at
     * once. KEYS: the marker, the index of held keys. Left alone where the
     * marker already counts (0); refused where the database holds keys
     * besides those two (-keys: not new, or it
     * reloaded data that may lack grants); else 1. ARGV[1] 'readmit': the
     * operator checked the fleet and takes the risk; keys or not, the
     * master counts at once (1), and the fleet bound maxttl is reset to
     * ARGV[2] where given. */
    [RL_SCRIPT_DECLARE] =
        RUN_ID
        "local m = redis.call('hmget', KEYS[1], 'served', 'run', 'pending')\n"
        "local run = run_id()\n"
        "local readmit = ARGV[1] == 'readmit'\n"
        "if readmit and ARGV[2] ~= '' then redis.call('hset', KEYS[1], 'maxttl', ARGV[2]) end\n"
        "if m[1] and m[2] == run and not m[3] then return 0 end\n"
        "local keys = redis.call('dbsize') - redis.call('exists', KEYS[1], KEYS[2])\n"
        "if keys > 0 and not readmit then return -keys end\n"
        "redis.call('hset', KEYS[1], 'born', 0, 'window', 0, 'served', 1, 'run', run)\n"
        "redis.call('hsetnx', KEYS[1], 'maxttl', 0)\n"
        "redis.call('hdel', KEYS[1], 'pending', 'cause', 'tight')\n"
        "return 1\n",
    /* A client learned of a longer ttl than a window it may have stamped
     * (memory.c): the marker hears of it (HEARD), which lengthens a window
     * still running and leaves a served one alone. Returns 1. */
    [RL_SCRIPT_RAISE] =
        HEARD
        "heard(1, tonumber(ARGV[1]))\n"
        "return 1\n",
    /* LEASES: how long may locks granted here still live? KEYS: the marker,
     * the index of held keys. A master whose vote counts answers {1, the
     * time left of the latest lease end in its index, maxttl} (ended
     * entries leave it); one that does not (reborn, window running) {0, 0,
     * maxttl}: it grants nothing, so it holds nothing that counts. */
    [RL_SCRIPT_LEASES] =
        HEARD
        "local mt, age = heard(1, 0)\n"
        "if not mt then return {0, 0, 0} end\n"
        "if age then return {0, 0, mt} end\n"
        NOW_MS
        "redis.call('zremrangebyscore', KEYS[2], '-inf', '(' .. now)\n"
        "local top = redis.call('zrange', KEYS[2], -1, -1, 'WITHSCORES')\n"
        "local left = 0\n"
        "if top[2] then left = math.max(tonumber(top[2]) - now, 0) end\n"
        "return {1, left, mt}\n",
    /* SETTLE: a pending master gets its window, from now on its own clock.
     * ARGV: the run_id the client saw pending (a later rebirth is not
     * settled by reports taken before it), the window, '1' if measured
     * from every master's leases (tight: no raise needed). 1 settled, 0 not
     * pending (or another process). */
    [RL_SCRIPT_SETTLE] =
        NOW_MS
        "local m = redis.call('hmget', KEYS[1], 'run', 'pending')\n"
        "if m[1] ~= ARGV[1] or not m[2] then return 0 end\n"
        "redis.call('hset', KEYS[1], 'born', now, 'window', ARGV[2])\n"
        "redis.call('hdel', KEYS[1], 'pending')\n"
        "if ARGV[3] == '1' then redis.call('hset', KEYS[1], 'tight', 1)\n"
        "else redis.call('hdel', KEYS[1], 'tight') end\n"
        "return 1\n",
    /* VOUCH: process ARGV[1] runs with AOF appendfsync always (ARGV[2]
     * '1'): its marker may outlive a restart; or it no longer does ('0').
     * Only the marker's own process is vouched for. 1 done, 0 not ours. */
    [RL_SCRIPT_VOUCH] =
        "local m = redis.call('hmget', KEYS[1], 'run', 'durable')\n"
        "if m[1] ~= ARGV[1] then return 0 end\n"
        "if ARGV[2] == '1' then redis.call('hset', KEYS[1], 'durable', ARGV[1])\n"
        "elseif m[2] then redis.call('hdel', KEYS[1], 'durable') end\n"
        "return 1\n",
};
/* clang-format on */

static char shas[RL_SCRIPT_COUNT][41];
static pthread_once_t shas_once = PTHREAD_ONCE_INIT;

static void compute_shas(void)
{
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < RL_SCRIPT_COUNT; i++) {
        unsigned char d[SHA_DIGEST_LENGTH];
        SHA1((const unsigned char *)bodies[i], strlen(bodies[i]), d);
        for (int j = 0; j < SHA_DIGEST_LENGTH; j++) {
            shas[i][2 * j] = hex[d[j] >> 4];
            shas[i][2 * j + 1] = hex[d[j] & 15];
        }
        shas[i][40] = '\0';
    }
}

int rl_scripts_init(void)
{
    return pthread_once(&shas_once, compute_shas) == 0 ? 0 : REDLOCK_ESYS;
}

const char *rl_script_body(int id)
{
    return bodies[id];
}

const char *rl_script_sha(int id)
{
    return shas[id];
}
