/* script-lua.h - the Lua pieces the scripts of script.c are built from.
 *
 * Each macro is Lua text (a local function, or a statement) that a body in
 * script.c pastes in where it needs it; script.c says what each script
 * does with them. Included by script.c alone.
 */
#ifndef REDLOCK_SCRIPT_LUA_H
#define REDLOCK_SCRIPT_LUA_H

/* The Lua is laid out as Lua, one line of it per C string, the macros'
 * backslashes aligned by hand: clang-format is kept out. */
/* clang-format off */

/* The master's own time in ms, for the marker and for leases. Scripts are
 * replicated by their effects (Redis >= 5 default, the only mode of 7), so
 * TIME may come before writes. */
#define NOW_MS "local t = redis.call('time')\n" \
               "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"

/* A queue q or its leases l that holds another type (`bad`, one of the
 * two) is deleted with the other (the waiters still alive join again, with
 * their old tickets, at their next attempt), and the master's log names
 * the key. */
#define DROP_QUEUE                                                             \
    "local function drop_queue(q, l, bad)\n"                                   \
    "  redis.log(redis.LOG_WARNING, 'redlock: deleted ' .. string.gsub(bad, '%z', '\\\\0') ..\n" \
    "            ' (a waiters\\' queue key of type ' .. redis.call('type', bad).ok .. ')')\n" \
    "  redis.call('del', q, l)\n"                                              \
    "end\n"

/* Hand K (ARGV-free: i, n) to its first live waiter, or delete it: drop waiters
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
 * master's log names it (the lease set's type is not asked: its first
 * read is a pcall, whose error says it). At most 64 heads are dropped per call; past
 * that the key is simply freed. The wake-up is a pcall too: an ACL without
 * the channel (&redlock:wake:*) must not turn a hand-over that happened into
 * a failed release; the waiter finds its reservation at its next poll
 * (a waiter whose own SUBSCRIBE the ACL refuses is told so once, wait.c;
 * one whose releaser's PUBLISH is refused is not told: it polls).
 * `skip`, a client's channel (a local run that reached its bound,
 * docs/waiting.md "The local hand-off"): the first live waiter of another
 * client is reserved for, if the queue's first 64 hold one; else the head. */
#define HAND_OVER                                                              \
    "local function hand_over(i, n, by, wake, skip)\n"                         \
    "  local q, l = KEYS[n + i], KEYS[2 * n + i]\n"                            \
    "  local function free() redis.call('del', KEYS[i]) end\n"                \
    "  local tq = redis.call('type', q).ok\n"                                  \
    "  if tq ~= 'zset' then\n"                                                 \
    "    if tq ~= 'none' then drop_queue(q, l, q) end\n"                       \
    "    free() return\n"                                                      \
    "  end\n"                                                                  \
    "  " NOW_MS                                                               \
    "  local ended = redis.pcall('zrangebyscore', l, '-inf', now)\n"           \
    "  if ended.err then drop_queue(q, l, l) free() return end\n"              \
    "  for _, w in ipairs(ended) do\n"                                         \
    "    redis.call('zrem', q, w) redis.call('zrem', l, w)\n"                  \
    "  end\n"                                                                  \
    "  local function live(w)\n"                                               \
    "    local hand, chan = string.match(w, '^(%d+)|(redlock:wake:%x+)|%x+$')\n" \
    "    local lease = tonumber(redis.call('zscore', l, w))\n"                 \
    "    hand = tonumber(hand)\n"                                              \
    "    if hand and hand > 0 and hand <= 2147483647 and lease and lease > now then\n" \
    "      return hand, chan, lease\n"                                         \
    "    end\n"                                                                \
    "  end\n"                                                                  \
    "  local function reserve(w, hand, chan, lease)\n"                         \
    "    redis.call('set', KEYS[i], '\\1' .. w, 'PX', hand)\n"               \
    "    if lease > now + hand then redis.call('zadd', l, 'XX', now + hand, w) end\n" \
    "    if wake then redis.pcall('publish', chan, w .. '|' .. by) end\n"      \
    "  end\n"                                                                  \
    "  for _ = 1, 64 do\n"                                                     \
    "    local head = redis.call('zrange', q, 0, 0)[1]\n"                      \
    "    if not head then break end\n"                                         \
    "    local hand, chan, lease = live(head)\n"                               \
    "    if hand then\n"                                                       \
    "      if skip and chan == skip then\n"                                    \
    "        for _, w in ipairs(redis.call('zrange', q, 1, 63)) do\n"          \
    "          local h2, c2, l2 = live(w)\n"                                   \
    "          if h2 and c2 ~= skip then reserve(w, h2, c2, l2) return end\n"  \
    "        end\n"                                                            \
    "      end\n"                                                              \
    "      reserve(head, hand, chan, lease) return\n"                          \
    "    end\n"                                                                \
    "    redis.call('zrem', q, head) redis.call('zrem', l, head)\n"            \
    "  end\n"                                                                  \
    "  free()\n"                                                               \
    "end\n"

/* Waiter w takes its place (its ticket; kept if it has one) in queue q and
 * its lease in l is renewed; both sets outlive the lease. The ZADDs are
 * tried with pcall so that the common case costs no TYPE call: a queue key
 * of another type is dropped (DROP_QUEUE) and the place taken again in the
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
 * its window not settled yet: `pending`), 0, the rebirth the marker names
 * and how long ago it was reborn, or the marker's age and its window while
 * the window runs on the
 * master's own clock. `served` records that the window has passed, so a
 * trusted master answers with one HMGET and no TIME. Who the master is
 * (its run_id) was checked when the connection was made (CHECK), before
 * any vote on it: a marker here is this process's own. */
#define HEARD                                                                   \
    "local function heard(mk, want)\n"                                          \
    "  local m = redis.call('hmget', KEYS[mk], 'maxttl', 'served', 'pending', 'tight', 'birth')\n" \
    "  if not m[1] and redis.call('exists', KEYS[mk]) == 0 then return nil end\n" \
    "  local maxttl = tonumber(m[1]) or 0\n"                                    \
    "  if want > maxttl then maxttl = want redis.call('hset', KEYS[mk], 'maxttl', want) end\n" \
    "  if m[2] then return maxttl, nil end\n"                                   \
    "  " NOW_MS                                                                 \
    "  if m[3] then\n"                                                          \
    "    local born = tonumber(redis.call('hget', KEYS[mk], 'born')) or now\n"  \
    "    return maxttl, -1, 0, m[5] or '', math.max(now - born, 0)\n"          \
    "  end\n"                                                                   \
    "  local b = redis.call('hmget', KEYS[mk], 'born', 'window')\n"             \
    "  local age, window = now - (tonumber(b[1]) or 0), tonumber(b[2]) or 0\n"  \
    "  if age >= window then redis.call('hset', KEYS[mk], 'served', 1) return maxttl, nil end\n" \
    "  if want > window and not m[4] then window = want redis.call('hset', KEYS[mk], 'window', want) end\n" \
    "  return maxttl, math.max(age, 0), window\n"                               \
    "end\n"

/* The process's run_id: who the master is (CHECK, and a rebirth). */
#define RUN_ID                                                                  \
    "local function run_id()\n"                                                \
    "  return string.match(redis.call('info', 'server'), 'run_id:(%x+)') or ''\n" \
    "end\n"

/* A master that lost its data (no marker: FLUSHALL, eviction, a restart
 * without persistence), or whose data another process wrote (a restart
 * that reloaded anything, a promoted replica, a restore, a copy), is
 * reborn: pending until a client measures how long the leases it may have
 * granted can still live. `birth` names this rebirth (a random value the
 * client that found it sent along): a settle computed for it names it,
 * and no other rebirth, of this process or another, can take it. */
#define REBORN                                                                  \
    "local function reborn(mk, maxttl, cause, run, birth)\n"                   \
    "  " NOW_MS                                                                 \
    "  redis.call('hset', KEYS[mk], 'born', now, 'window', 0, 'maxttl', maxttl, 'pending', 1,\n" \
    "             'cause', cause, 'run', run, 'birth', birth)\n"               \
    "  redis.call('hdel', KEYS[mk], 'served', 'durable', 'tight')\n"            \
    "end\n"

/* The fence counter at key k is raised to f (a decimal string the fleet
 * reported), never lowered, and never created for 0: a counter is a key,
 * and a master with one is not empty (DECLARE). Compared as text, INCR's
 * canonical form of at most 18 digits: exact where a Lua number would
 * round above 2^53. A counter that holds garbage is left for the acquire
 * to report (script.c, -3). */
#define RAISE_FENCE                                                             \
    "local function raise(k, f)\n"                                             \
    "  if not f or not string.match(f, '^[1-9]%d*$') or #f > 18 then return end\n" \
    "  local v = redis.pcall('get', k)\n"                                      \
    "  if type(v) == 'table' then return end\n"                                \
    "  if v and (not string.match(v, '^%d+$') or #v > #f or (#v == #f and v >= f)) then return end\n" \
    "  redis.call('set', k, f)\n"                                              \
    "end\n"

/* The lease of token `tok` on keys KEYS[first..first+n-1], just granted with
 * `ttl`, joins the index of held keys KEYS[ik], scored by when it ends on
 * this master's clock (PEXPIRETIME: no TIME call); entries whose lease ended
 * before now (the grant's own time: its end minus its ttl) leave it, so the
 * index holds the live leases and never the history. An entry is named by its
 * lease's token, not its key: whoever removes an entry (a release, whenever
 * it runs) can only remove its own lease's, never the entry of a holder who
 * took the key after it (docs/memory-guard.md, "The release without Lua").
 * The index never reads a key: a user whose ACL covers one key prefix can
 * keep it. */
#define INDEX                                                                   \
    "local function index(ik, first, n, ttl, tok)\n"                            \
    "  local e = 0\n"                                                          \
    "  for i = first, first + n - 1 do\n"                                       \
    "    e = math.max(e, redis.call('pexpiretime', KEYS[i]))\n"                  \
    "  end\n"                                                                  \
    "  redis.call('zadd', KEYS[ik], e, tok)\n"                                 \
    "  redis.call('zremrangebyscore', KEYS[ik], '-inf', '(' .. (e - ttl))\n"     \
    "end\n"

/* Is value v the lease of token t: t itself, or t marked (a waiter joined
 * its queue while it was held: the acquire's JOIN below), t .. "\2"? A
 * token is printable (redlock.h): the mark can be no token's last byte. */
#define OURS                                                                    \
    "local function ours(v, t) return v == t or v == t .. '\\2' end\n"

/* clang-format on */

#endif
