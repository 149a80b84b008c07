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
 *   K "\0fence"  its fencing counter
 *   K "\0q"      the waiters' queue: a sorted set, member = waiter, score =
 *                the time the waiter started waiting (its ticket)
 *   K "\0l"      the same members, score = when the waiter's lease ends
 *   "\0redlock:marker"  the master's memory marker: a hash {born, window,
 *                maxttl, served} with no ttl (HEARD, the acquire script)
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

/* The master's own time in ms, for the marker and for leases. Scripts are
 * replicated by their effects (Redis >= 5 default, the only mode of 7), so
 * TIME may come before writes. */
#define NOW_MS "local t = redis.call('time')\n" \
               "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"

/* Hand K (ARGV-free: i, n) to its first live waiter, or delete it: drop
 * waiters whose lease ended, reserve K for the head for as long as its
 * reservation may wait, and, if `wake`, tell it on its client's channel. A
 * failed attempt's cleanup hands over quietly: the head finds the
 * reservation at its next poll, well within the reservation's life, and no
 * cleanup ever wakes anyone (waking at every failed attempt is the herd
 * this queue exists to avoid). Without a queue (the common case) it is a
 * DEL: the queue's existence is checked first so that an uncontended
 * release costs the master three calls. */
#define HAND_OVER                                                              \
    "local function hand_over(i, n, by, wake)\n"                               \
    "  local q, l = KEYS[n + i], KEYS[2 * n + i]\n"                            \
    "  if redis.call('exists', q) == 0 then redis.call('del', KEYS[i]) return end\n" \
    "  " NOW_MS                                                               \
    "  for _, w in ipairs(redis.call('zrangebyscore', l, '-inf', now)) do\n"  \
    "    redis.call('zrem', q, w) redis.call('zrem', l, w)\n"                  \
    "  end\n"                                                                  \
    "  local head = redis.call('zrange', q, 0, 0)[1]\n"                        \
    "  if not head then redis.call('del', KEYS[i]) return end\n"               \
    "  local hand, chan = string.match(head, '^(%d+)|([^|]*)|')\n"             \
    "  redis.call('set', KEYS[i], '\\1' .. head, 'PX', tonumber(hand) or 1000)\n" \
    "  if wake then redis.call('publish', chan, head .. '|' .. by) end\n"     \
    "end\n"

/* Waiter w takes its place (its ticket; kept if it has one) in queue q and
 * its lease in l is renewed; both sets outlive the lease. */
#define JOIN                                                                   \
    "local function join(q, l, w, ticket, lease)\n"                            \
    "  " NOW_MS                                                               \
    "  redis.call('zadd', q, 'NX', ticket, w)\n"                               \
    "  redis.call('zadd', l, now + lease, w)\n"                                \
    "  redis.call('pexpire', q, 2 * lease) redis.call('pexpire', l, 2 * lease)\n" \
    "end\n"

/* The marker at KEYS[mk] hears of a ttl `want` in use: the fleet's longest
 * (maxttl) is raised to it, and so is the window of a master that is still
 * young (a master that has served its window remembers every grant made
 * since its rebirth, so its window never moves again). Returns nil without
 * a marker; else maxttl and, while the window runs on the master's own
 * clock, the marker's age. `served` records that the window has passed, so
 * a trusted master answers with one HMGET and no TIME; a marker without it
 * (a rebirth, a declared master before its first vote, a client older than
 * the flag) is judged by born + window, which is the rule itself. */
#define HEARD                                                                   \
    "local function heard(mk, want)\n"                                          \
    "  local m = redis.call('hmget', KEYS[mk], 'maxttl', 'served')\n"           \
    "  if not m[1] then return nil end\n"                                       \
    "  local maxttl = tonumber(m[1]) or 0\n"                                    \
    "  if want > maxttl then maxttl = want redis.call('hset', KEYS[mk], 'maxttl', want) end\n" \
    "  if m[2] then return maxttl, nil end\n"                                   \
    "  " NOW_MS                                                                 \
    "  local b = redis.call('hmget', KEYS[mk], 'born', 'window')\n"             \
    "  local age, window = now - (tonumber(b[1]) or 0), tonumber(b[2]) or 0\n"  \
    "  if age >= window then redis.call('hset', KEYS[mk], 'served', 1) return maxttl, nil end\n" \
    "  if want > window then redis.call('hset', KEYS[mk], 'window', want) end\n" \
    "  return maxttl, age\n"                                                    \
    "end\n"

static const char *const bodies[RL_SCRIPT_COUNT] = {
    /* Release. KEYS: n locks, their n queues, their n lease sets.
     * ARGV[1] the value to remove (a token; for a waiter that gives up, its
     * reservation "\1" .. waiter), ARGV[2] '1' to hand each key to its next
     * waiter and wake it, '0' to hand over quietly (a failed attempt's
     * cleanup), ARGV[3] a waiter (or ''): with ARGV[4] ''
     * it leaves the queues (it gives up); with ARGV[4] its ticket and
     * ARGV[5] its lease it keeps its place there (the cleanup of its failed
     * attempt, which may have been granted, and so dequeued, here). Returns
     * -1 if any key holds another value (we had lost it), 1 if we removed
     * something, 0 if everything was already gone. */
    [RL_SCRIPT_RELEASE] =
        HAND_OVER
        JOIN
        "local n = #KEYS / 3\n"
        "local mine, other = 0, 0\n"
        "local stays = ARGV[3] ~= '' and ARGV[4] ~= ''\n"
        "for i = 1, n do\n"
        "  if stays then\n"
        "    join(KEYS[n + i], KEYS[2 * n + i], ARGV[3], ARGV[4], tonumber(ARGV[5]))\n"
        "  elseif ARGV[3] ~= '' then\n"
        "    redis.call('zrem', KEYS[n + i], ARGV[3]) redis.call('zrem', KEYS[2 * n + i], ARGV[3])\n"
        "  end\n"
        "  local v = redis.call('get', KEYS[i])\n"
        "  if v == ARGV[1] then\n"
        "    mine = mine + 1\n"
        "    hand_over(i, n, ARGV[1], ARGV[2] == '1')\n"
        "  elseif v ~= false then other = other + 1 end\n"
        "end\n"
        "if other > 0 then return -1 end\n"
        "if mine > 0 then return 1 end\n"
        "return 0\n",
    /* Extend: all or nothing on this master. Only if every key still holds
     * our token; a key that is gone (0) or another's (-1) extends nothing,
     * so extend never resurrects a lock. KEYS: n locks, then (ARGV[3] '1')
     * the memory marker, which hears of the new ttl first: a lock extended
     * to a longer ttl is a longer ttl in use (NOTES.md §4). */
    [RL_SCRIPT_EXTEND] =
        HEARD
        "local n = #KEYS\n"
        "if ARGV[3] == '1' then n = n - 1 heard(#KEYS, tonumber(ARGV[2])) end\n"
        "for i = 1, n do\n"
        "  local v = redis.call('get', KEYS[i])\n"
        "  if v == false then return 0 end\n"
        "  if v ~= ARGV[1] then return -1 end\n"
        "end\n"
        "for i = 1, n do redis.call('pexpire', KEYS[i], ARGV[2]) end\n"
        "return 1\n",
    [RL_SCRIPT_STATUS] =
        "return {redis.call('get', KEYS[1]), redis.call('pttl', KEYS[1])}\n",
    /* Acquire. KEYS: n locks, then (flag f) n fence counters, then (flag q)
     * n queues and n lease sets, then (flag m) the memory marker. ARGV: 1
     * token, 2 ttl, 3 n, 4 flags, 5 the waiter (flag q), 6 its ticket, 7 its
     * lease (ms), 8 the memory window the client asks for (its longest ttl,
     * the longest any master reported, restart_guard_ms).
     * Returns {status, fence or marker age, the marker's maxttl}: status 1
     * granted, 0 held (nothing written but the waiter's place in the
     * queue), -2 this master's memory cannot be trusted yet (nothing
     * written).
     *
     * The marker: a master whose memory marker is missing has lost its
     * data (a restart without persistence, FLUSHALL, lost AOF files, an
     * eviction), so a lock it granted may still be live elsewhere: it
     * votes for nobody until `window` (the longest ttl in use when it was
     * reborn, raised while it is still young as clients learn of longer
     * ones) has passed on its own clock (HEARD). A key may be set when it
     * is absent, or reserved for this very waiter (the hand-off); one key
     * and no queue is a bare SET NX, the uncontended case, and a refused
     * SET reads the key, so that a key of another type says WRONGTYPE at
     * once instead of "held". */
    [RL_SCRIPT_ACQUIRE] =
        HEARD
        JOIN
        "local n = tonumber(ARGV[3])\n"
        "local fenced = string.find(ARGV[4], 'f', 1, true)\n"
        "local queued = string.find(ARGV[4], 'q', 1, true)\n"
        "local k = n + 1\n"
        "local fk = k if fenced then k = k + n end\n"
        "local qk = k if queued then k = k + 2 * n end\n"
        "local maxttl = 0\n"
        "if string.find(ARGV[4], 'm', 1, true) then\n"
        "  local want = tonumber(ARGV[8])\n"
        "  local mt, age = heard(k, want)\n"
        "  if not mt then\n"
        "    " NOW_MS
        "    redis.call('hset', KEYS[k], 'born', now, 'window', want, 'maxttl', want)\n"
        "    return {-2, 0, want}\n"
        "  end\n"
        "  maxttl = mt\n"
        "  if age then return {-2, age, maxttl} end\n"
        "end\n"
        "if n == 1 and not queued then\n"
        "  if not redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then\n"
        "    redis.call('get', KEYS[1])\n"
        "    return {0, 0, maxttl}\n"
        "  end\n"
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
        "      return {0, 0, maxttl}\n"
        "    end\n"
        "  end\n"
        "  for i = 1, n do redis.call('set', KEYS[i], ARGV[1], 'PX', ARGV[2]) end\n"
        "  if queued then\n"
        "    for j = 0, n - 1 do\n"
        "      redis.call('zrem', KEYS[qk + j], ARGV[5]) redis.call('zrem', KEYS[qk + n + j], ARGV[5])\n"
        "    end\n"
        "  end\n"
        "end\n"
        "local f = 0\n"
        "if fenced then\n"
        "  for j = 0, n - 1 do\n"
        "    local v = redis.call('incr', KEYS[fk + j])\n"
        "    if v > f then f = v end\n"
        "  end\n"
        "end\n"
        "return {1, f, maxttl}\n",
    /* Fence write-back: counter = max(counter, ARGV[1]) on every key. */
    [RL_SCRIPT_FENCE] =
        "local f = tonumber(ARGV[1])\n"
        "for i = 1, #KEYS do\n"
        "  local c = tonumber(redis.call('get', KEYS[i]) or '0')\n"
        "  if c < f then redis.call('set', KEYS[i], ARGV[1]) end\n"
        "end\n"
        "return 1\n",
    /* The marker as it stands, without creating it: {age, window, maxttl},
     * or {-1, 0, 0} when there is none. For the handshake and the probes.
     * A marker that has served its window reports it as over, whatever the
     * clock says since: the acquire script goes by the same flag. */
    [RL_SCRIPT_MARKER] =
        NOW_MS
        "local m = redis.call('hmget', KEYS[1], 'born', 'window', 'maxttl', 'served')\n"
        "if not m[1] then return {-1, 0, 0} end\n"
        "local age, window = now - tonumber(m[1]), tonumber(m[2]) or 0\n"
        "if m[4] and window > age then window = age end\n"
        "return {age, window, tonumber(m[3]) or 0}\n",
    /* An operator declares a new master empty: a marker that counts at once,
     * only where there is none. Returns 1 if created, 0 if one was there. */
    [RL_SCRIPT_DECLARE] =
        "if redis.call('exists', KEYS[1]) == 1 then return 0 end\n"
        "redis.call('hset', KEYS[1], 'born', 0, 'window', 0, 'maxttl', 0, 'served', 1)\n"
        "return 1\n",
    /* A client learned of a longer ttl than a window it may have stamped
     * (memory.c): the marker hears of it (HEARD), which lengthens a window
     * still running and leaves a served one alone. Returns 1. */
    [RL_SCRIPT_RAISE] =
        HEARD
        "heard(1, tonumber(ARGV[1]))\n"
        "return 1\n",
};

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
