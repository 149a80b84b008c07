/* script.c - the Lua scripts every master runs, and their SHA1 digests.
 *
 * One script per step that must be decided and done at once on a master:
 * release, extend, acquire (with the guard's HEARD), status, fence, and the
 * guard's CHECK, DECLARE, RAISE, LEASES, SETTLE. Digests are computed locally, so EVALSHA
 * goes before any SCRIPT LOAD reply (NOSCRIPT: fanout.c). The keys a lock
 * uses, what each holds, and why each step is a script: docs/wire.md, "Per verb".
 */
#include "base/script.h"
#include "base/common.h"
#include "base/script-lua.h"

#include <openssl/sha.h>
#include <pthread.h>
#include <string.h>

/* To the end of bodies[], the Lua is laid out as Lua: one line of it per C
 * string, the pieces (script-lua.h: NOW_MS, DROP_QUEUE, ...) one per line
 * where a body takes them. clang-format would pack strings and piece names
 * onto shared lines: it is kept out. */
/* clang-format off */

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
     * release sends ARGV[1] alone (hand over and wake, no waiter); ARGV[6],
     * a client's channel, passes over that client's waiters where another
     * client waits (a local run that reached its bound, HAND_OVER): every
     * argument costs the master a Lua string, and this is the common call. Returns
     * -1 if any key holds another value (we had lost it), 1 if we removed
     * something, 0 if everything was already gone. A key is ours with our
     * token or our token marked (OURS). The lease's index entry (named by
     * ARGV[1]) goes whatever the keys hold: the lease ends here. */
    [RL_SCRIPT_RELEASE] =
        /* The common case first, before any function below is made: one
         * lock, no waiter, nobody queued (a DEL and the index, three calls
         * and the compare). What it returns is what the rest would. A key
         * it finds ours with a queue (or marked) goes on to the hand-over
         * with what it read (`first`): the index entry is gone already. */
        "local first\n"
        "if #KEYS == 4 and #ARGV == 1 then\n"
        "  redis.call('zrem', KEYS[4], ARGV[1])\n"
        "  local v = redis.call('get', KEYS[1])\n"
        "  if v == ARGV[1] and redis.call('exists', KEYS[2]) == 0 then\n"
        "    redis.call('del', KEYS[1]) return 1\n"
        "  end\n"
        "  if v ~= ARGV[1] and v ~= ARGV[1] .. '\\2' then if v then return -1 end return 0 end\n"
        "  first = v\n"
        "end\n"
        OURS
        DROP_QUEUE
        HAND_OVER
        JOIN
        "local n = math.floor(#KEYS / 3)\n"
        "if not first then redis.call('zrem', KEYS[3 * n + 1], ARGV[1]) end\n"
        "local mine, other = 0, 0\n"
        "local waiter, wake = ARGV[3] or '', (ARGV[2] or '1') == '1'\n"
        "local skip = ARGV[6] ~= '' and ARGV[6] or nil\n"
        "local stays = waiter ~= '' and (ARGV[4] or '') ~= ''\n"
        "for i = 1, n do\n"
        "  if stays then\n"
        "    join(KEYS[n + i], KEYS[2 * n + i], waiter, ARGV[4], tonumber(ARGV[5]))\n"
        "  elseif waiter ~= '' then\n"
        "    redis.pcall('zrem', KEYS[n + i], waiter) redis.pcall('zrem', KEYS[2 * n + i], waiter)\n"
        "  end\n"
        "  local v = first or redis.call('get', KEYS[i])\n"
        "  if ours(v, ARGV[1]) then\n"
        "    mine = mine + 1\n"
        "    hand_over(i, n, ARGV[1], wake, skip)\n"
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
     * again, but its vote must not count towards a lease
     * (docs/memory-guard.md, "How long a reborn master sits out"). A key
     * marked for its waiters (OURS) is ours, and stays marked. */
    [RL_SCRIPT_EXTEND] =
        HEARD
        OURS
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
        "  if not ours(v, ARGV[1]) then return -1 end\n"
        "end\n"
        "for i = 1, n do redis.call('pexpire', KEYS[i], ARGV[2]) end\n"
        "if marked then\n"
        "  redis.call('zadd', KEYS[n + 2], redis.call('pexpiretime', KEYS[1]), ARGV[1])\n"
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
     * the longest any master reported, restart_guard_ms), 9 (a local
     * hand-off only) the token of the holder that passes it: a key that
     * holds it (or it marked) counts as free, and is set anew with a full
     * ttl, its mark kept (docs/waiting.md, "The local hand-off").
     * Returns {status, fence or marker age, the marker's maxttl}: status 1
     * granted (with ARGV[9], a fourth: 1 if a key held that token, plus 2
     * if the first key's queue holds another client's waiter), 0 held (nothing written but the waiter's place in the
     * queue; the second element 1 if one of a set's keys is reserved for
     * this waiter: a wake-up for it was real, acquire.c; a fourth, the
     * waiter's rank in the first key's queue, 0 the head: how often it
     * polls), -2 this master's memory cannot be trusted yet (nothing
     * written; age -1: its window is not settled yet), and then a fourth
     * element, the window, and (pending) a fifth and a sixth, the rebirth
     * the marker names (a settle names it back) and its age (ms); -3 the fence counter of resource j (0-based,
     * the second element; j = n: the master's own) is garbage: not a
     * decimal integer below 10^18 (fourth element 0) or a key of another
     * type (1). Counters are checked before anything is written, and never
     * repaired: a counter reset would hand out a fence already used
     * (docs/waiting.md, "Waiting in turn: the fair hand-off"). The fence is
     * the master's counter plus one, and above
     * any old per-resource counter, which is then set to it: a client of
     * before one counter per master still counts up from there.
     *
     * The marker: a master whose memory marker is missing has lost its
     * data (FLUSHALL, lost AOF files, an eviction; a restart is caught
     * earlier, by CHECK), so a lock it granted may still be live elsewhere:
     * it is reborn (REBORN, the rebirth named by this attempt's token: a
     * fresh random value) and votes for nobody until a client has settled
     * its window (SETTLE) and the window has passed on its own clock
     * (HEARD). Keys granted here join the index of held keys. A key may be set when it
     * is absent, or reserved for this very waiter (the hand-off); one key
     * and no queue is a bare SET NX, the uncontended case, and a refused
     * SET reads the key, so that a key of another type says WRONGTYPE at
     * once instead of "held". A waiter that joins while the key holds a
     * token whose lease is in the index (a holder of this version, which
     * may release with a bare compare-and-delete) marks the value, on
     * every key of a set it waits for that is so held: that compare then
     * fails, and the holder's release takes this script, which hands the
     * key to the queue's head (docs/memory-guard.md,
     * "The release without Lua"). */
    [RL_SCRIPT_ACQUIRE] =
        HEARD
        RUN_ID
        REBORN
        INDEX
        DROP_QUEUE
        JOIN
        "local n = tonumber(ARGV[3])\n"
        "local prev = ARGV[9] ~= '' and ARGV[9] or nil\n"
        "local fenced = string.find(ARGV[4], 'f', 1, true)\n"
        "local queued = string.find(ARGV[4], 'q', 1, true)\n"
        "local k = n + 1\n"
        "local fk = k if fenced then k = k + n + 1 end\n"
        "local qk = k if queued then k = k + 2 * n end\n"
        "local maxttl = 0\n"
        "local marked = string.find(ARGV[4], 'm', 1, true)\n"
        "if marked then\n"
        "  local want = tonumber(ARGV[8])\n"
        "  local mt, age, window, birth, since = heard(k, want)\n"
        "  if not mt then\n"
        "    reborn(k, want, 'lost', run_id(), ARGV[1])\n"
        "    return {-2, -1, want, 0, ARGV[1], 0}\n"
        "  end\n"
        "  maxttl = mt\n"
        "  if age then return {-2, age, maxttl, window or 0, birth, since} end\n"
        "end\n"
        "if fenced then\n"
        "  for j = 0, n do\n"
        "    local v = redis.pcall('get', KEYS[fk + j])\n"
        "    if type(v) == 'table' then return {-3, j, maxttl, 1} end\n"
        "    if v and not (string.match(v, '^%d+$') and #v <= 18) then return {-3, j, maxttl, 0} end\n"
        "  end\n"
        "end\n"
        "local took, others = 0, 0\n"
        "if n == 1 and not queued and not prev then\n"
        "  if not redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then\n"
        "    redis.call('get', KEYS[1])\n"
        "    return {0, 0, maxttl}\n"
        "  end\n"
        "  if marked then index(k + 1, 1, 1, tonumber(ARGV[2]), ARGV[1]) end\n"
        "else\n"
        "  local mine, mark = '\\1' .. ARGV[5], {}\n"
        "  for i = 1, n do\n"
        "    local v = redis.call('get', KEYS[i])\n"
        "    if prev and v and (v == prev or v == prev .. '\\2') then\n"
        "      took, mark[i] = 1, string.sub(v, #prev + 1)\n"
        "    elseif v and not (queued and v == mine) then\n"
        "      if queued then\n"
        "        for j = 0, n - 1 do\n"
        "          join(KEYS[qk + j], KEYS[qk + n + j], ARGV[5], ARGV[6], tonumber(ARGV[7]))\n"
        "        end\n"
        "        for j = i, n do\n"
        "          local h = j == i and v or redis.call('get', KEYS[j])\n"
        "          if marked and h and string.byte(h, 1) ~= 1 and string.byte(h, -1) ~= 2 and\n"
        "             redis.call('zscore', KEYS[k + 1], h) then\n"
        "            redis.call('set', KEYS[j], h .. '\\2', 'KEEPTTL')\n"
        "          end\n"
        "        end\n"
        "      end\n"
        "      local r, rank = 0, 0\n"
        "      for j = 1, n do if queued and j ~= i and redis.call('get', KEYS[j]) == mine then r = 1 end end\n"
        "      if queued then rank = redis.call('zrank', KEYS[qk], ARGV[5]) or 0 end\n"
        "      return {0, r, maxttl, rank}\n"
        "    end\n"
        "  end\n"
        "  for i = 1, n do redis.call('set', KEYS[i], ARGV[1] .. (mark[i] or ''), 'PX', ARGV[2]) end\n"
        "  if marked then\n"
        "    if prev then redis.call('zrem', KEYS[k + 1], prev) end\n"
        "    index(k + 1, 1, n, tonumber(ARGV[2]), ARGV[1])\n"
        "  end\n"
        "  if prev and queued then\n"
        "    local chan = string.match(ARGV[5], '^%d+|([^|]+)|')\n"
        "    for _, w in ipairs(redis.call('zrange', KEYS[qk], 0, 63)) do\n"
        "      local c = string.match(w, '^%d+|([^|]+)|')\n"
        "      if c and c ~= chan then others = 1 break end\n"
        "    end\n"
        "  end\n"
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
        "if prev then return {1, f, maxttl, took + 2 * others} end\n"
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
     * wrote `run`. A marker any other process wrote (a restart that
     * reloaded RDB or AOF, whatever its fsync; a promoted replica; a
     * restore from backup; a copy of another master's data) may lack grants
     * the process before acknowledged, and nothing that travels with the
     * data can say otherwise: the master is reborn. No marker: reborn too;
     * a marker without `run` (an older redlock, or by hand) as well.
     * A client whose connection reaches this server at a new address of the
     * master's name (ARGV[2] 'moved') makes it reborn whatever its marker
     * says: the server it replaces may have granted leases as this master
     * that this one never saw (docs/memory-guard.md, "Names that move").
     * Here, not in the client: every client's acquire reads this marker,
     * so none counts the server before the window has passed.
     * KEYS: the marker, the index of held keys (entries whose lease ended
     * leave it here: the fast path's grants never sweep it, acquire.c).
     * ARGV[1]: the longest ttl the client knows (a new marker's maxttl),
     * ARGV[2] 'moved' or '', ARGV[3] a fresh random value that names a
     * rebirth made here. Returns {age, window, maxttl, state, cause, now,
     * birth}: state 0 counts, 1 its window runs, 2 pending (no window yet);
     * cause 0, 1 lost its data (no marker), 2 another process's marker, 3
     * its name moved; now the master's clock (ms), from which the client
     * bounds the lease ends its fast path writes into the index; birth the
     * rebirth the marker names ('' if none). A served marker reports its
     * window as over, whatever the clock says since: HEARD goes by the flag. */
    [RL_SCRIPT_MARKER] =
        RUN_ID
        REBORN
        "local run = run_id()\n"
        "local m = redis.call('hmget', KEYS[1], 'run', 'maxttl')\n"
        "local told = tonumber(ARGV[1]) or 0\n"
        "if ARGV[2] == 'moved' then\n"
        "  reborn(1, math.max(tonumber(m[2]) or 0, told), 'moved', run, ARGV[3])\n"
        "elseif redis.call('exists', KEYS[1]) == 0 then\n"
        "  reborn(1, told, 'lost', run, ARGV[3])\n"
        "elseif m[1] ~= run then\n"
        "  reborn(1, math.max(tonumber(m[2]) or 0, told), 'restart', run, ARGV[3])\n"
        "end\n"
        NOW_MS
        "local f = redis.call('hmget', KEYS[1], 'born', 'window', 'maxttl', 'served', 'pending', 'cause',\n"
        "                     'birth')\n"
        "local age, window = now - (tonumber(f[1]) or 0), tonumber(f[2]) or 0\n"
        "local state = 0\n"
        "if f[5] then state = 2 elseif not f[4] and age < window then state = 1\n"
        "elseif not f[4] then redis.call('hset', KEYS[1], 'served', 1) end\n"
        "if f[4] and window > age then window = age end\n"
        /* pending under a name no client made (an older redlock's marker,
         * or by hand): named now, or nobody could settle it */
        "if f[5] and not string.match(f[7] or '', '^%x+$') then\n"
        "  f[7] = ARGV[3] redis.call('hset', KEYS[1], 'birth', ARGV[3])\n"
        "end\n"
        "local cause = 0\n"
        "if f[6] == 'lost' then cause = 1 elseif f[6] == 'restart' then cause = 2\n"
        "elseif f[6] == 'moved' then cause = 3 end\n"
        "if redis.call('type', KEYS[2]).ok == 'zset' then\n"
        "  redis.call('zremrangebyscore', KEYS[2], '-inf', '(' .. now)\n"
        "end\n"
        "return {math.max(age, 0), window, tonumber(f[3]) or 0, state, cause, now, f[7] or ''}\n",
    /* An operator declares a master new and empty: its marker counts at
     * once. KEYS: the marker, the index of held keys, the master's fence
     * counter. Left alone where the marker already counts (0); refused
     * where the database holds keys besides the marker and the index
     * (-keys: not new, or it reloaded data that may lack grants); else 1.
     * ARGV[1] 'readmit': the operator checked the fleet and takes the
     * risk; keys or not, the master counts at once (1), and the fleet bound
     * maxttl is set to ARGV[2] where given (the client never asks below a
     * lease the fleet reports live). ARGV[3]: the largest fence counter the
     * fleet reported: a master made to count is raised to it first, so
     * that no fence it gives goes back (docs/waiting.md, "Fencing tokens").
     * ARGV[4]: how long ago
     * (ms, this master's clock) its rebirth must be: an attempt that
     * counted a vote it gave before it forgot decides within that, and the
     * fleet's look must come after (declare.c); a rebirth younger than that
     * answers {'wait', ms left}, and so does a master without a marker,
     * which is reborn here (named ARGV[5]) to start that wait. */
    [RL_SCRIPT_DECLARE] =
        RUN_ID
        REBORN
        RAISE_FENCE
        "local m = redis.call('hmget', KEYS[1], 'served', 'run', 'pending', 'born')\n"
        "local run = run_id()\n"
        "local readmit = ARGV[1] == 'readmit'\n"
        "local age = tonumber(ARGV[4]) or 0\n"
        "if readmit and ARGV[2] ~= '' then redis.call('hset', KEYS[1], 'maxttl', ARGV[2]) end\n"
        "if m[1] and m[2] == run and not m[3] then return 0 end\n"
        "if m[2] ~= run then\n"
        "  reborn(1, 0, 'lost', run, ARGV[5])\n"
        "  return {'wait', age}\n"
        "end\n"
        NOW_MS
        "if m[3] and now - (tonumber(m[4]) or now) < age then\n"
        "  return {'wait', age - (now - (tonumber(m[4]) or now))}\n"
        "end\n"
        "local keys = redis.call('dbsize') - redis.call('exists', KEYS[1], KEYS[2])\n"
        "if keys > 0 and not readmit then return -keys end\n"
        "raise(KEYS[3], ARGV[3])\n"
        "redis.call('hset', KEYS[1], 'born', 0, 'window', 0, 'served', 1, 'run', run)\n"
        "redis.call('hsetnx', KEYS[1], 'maxttl', 0)\n"
        "redis.call('hdel', KEYS[1], 'pending', 'cause', 'tight', 'birth')\n"
        "return 1\n",
    /* A client learned of a longer ttl than a window it may have stamped
     * (memory.c): the marker hears of it (HEARD), which lengthens a window
     * still running and leaves a served one alone. Returns 1. */
    [RL_SCRIPT_RAISE] =
        HEARD
        "heard(1, tonumber(ARGV[1]))\n"
        "return 1\n",
    /* LEASES: how long may locks granted here still live? KEYS: the marker,
     * the index of held keys, the master's fence counter. A master whose
     * vote counts answers {1, the time left of the latest lease end in its
     * index, maxttl, fence, that lease's token} (ended entries leave it;
     * no token when none is live); one that does not
     * (reborn, window running) {0, 0, maxttl, fence, '', how long ago it was
     * reborn while pending (ms; -1 once settled, or without a marker, which
     * the operator's word reborns)}: it grants nothing, so it holds nothing
     * that counts. fence: its counter as text ('0' if none or
     * garbage), which a settle raises a reborn master's counter to. */
    [RL_SCRIPT_LEASES] =
        HEARD
        "local f = redis.pcall('get', KEYS[3])\n"
        "if type(f) ~= 'string' or not string.match(f, '^%d+$') then f = '0' end\n"
        "local mt, age, _, _, since = heard(1, 0)\n"
        "if not mt then return {0, 0, 0, f, '', -1} end\n"
        "if age then return {0, 0, mt, f, '', since or -1} end\n"
        NOW_MS
        "redis.call('zremrangebyscore', KEYS[2], '-inf', '(' .. now)\n"
        "local top = redis.call('zrange', KEYS[2], -1, -1, 'WITHSCORES')\n"
        "if not top[2] then return {1, 0, mt, f} end\n"
        "return {1, math.max(tonumber(top[2]) - now, 0), mt, f, top[1]}\n",
    /* SETTLE: a pending master gets its window, from now on its own clock.
     * KEYS: the marker, the master's fence counter. ARGV: the rebirth the
     * client saw pending (its `birth`: a settle computed before a later
     * rebirth, of another process or of this one after a FLUSHALL, names
     * another and changes nothing), the window, '1' if measured from every
     * master's leases (tight: no raise needed), the largest fence counter
     * the fleet reported (the counter is raised to it: a fence never goes
     * back, docs/waiting.md, "Fencing tokens"). 1 settled, 0 not pending (or
     * another rebirth). */
    [RL_SCRIPT_SETTLE] =
        NOW_MS
        RAISE_FENCE
        "local m = redis.call('hmget', KEYS[1], 'birth', 'pending')\n"
        "if ARGV[1] == '' or m[1] ~= ARGV[1] or not m[2] then return 0 end\n"
        "redis.call('hset', KEYS[1], 'born', now, 'window', ARGV[2])\n"
        "redis.call('hdel', KEYS[1], 'pending')\n"
        "if ARGV[3] == '1' then redis.call('hset', KEYS[1], 'tight', 1)\n"
        "else redis.call('hdel', KEYS[1], 'tight') end\n"
        "raise(KEYS[2], ARGV[4])\n"
        "return 1\n",
    /* Pass: a local hand-off's common case, without the acquire script's
     * pieces (docs/waiting.md, "The local hand-off"). One lock, no fence,
     * a master whose memory counts (`served`, read in the same step as the
     * SET, as the fast path's transaction does) for this ttl, and the key
     * holding the passing token (ARGV[3], or it marked): the key is set to
     * ARGV[1] with a full ttl ARGV[2] (its mark kept), the index moves from
     * the old lease to the new, the waiter ARGV[4] leaves the queue.
     * Anything else answers {-4} and changes nothing: the client sends the
     * acquire script, which knows every case. KEYS: the lock, its queue and
     * lease set, the marker, the index. ARGV[5]: the memory window asked;
     * ARGV[6] '1' if the waiter may have a place in the queue (a parked
     * waiter has none: two calls saved).
     * Returns {1, 0, maxttl, 1 + 2 if another client's waiter is queued}. */
    [RL_SCRIPT_PASS] =
        "local m = redis.call('hmget', KEYS[4], 'served', 'maxttl')\n"
        "local maxttl = tonumber(m[2]) or 0\n"
        "if not m[1] or maxttl < tonumber(ARGV[5]) then return {-4} end\n"
        "local p, v = ARGV[3], redis.call('get', KEYS[1])\n"
        "if v ~= p and v ~= p .. '\\2' then return {-4} end\n"
        "redis.call('set', KEYS[1], ARGV[1] .. string.sub(v, #p + 1), 'PX', ARGV[2])\n"
        "redis.call('zrem', KEYS[5], p)\n"
        "redis.call('zadd', KEYS[5], redis.call('pexpiretime', KEYS[1]), ARGV[1])\n"
        "local chan, others = string.match(ARGV[4], '^%d+|([^|]+)|'), 0\n"
        "local q = redis.pcall('zrange', KEYS[2], 0, 63)\n"
        "if not q.err then\n"
        "  if ARGV[6] == '1' then redis.call('zrem', KEYS[2], ARGV[4]) redis.pcall('zrem', KEYS[3], ARGV[4]) end\n"
        "  for _, w in ipairs(q) do\n"
        "    local c = string.match(w, '^%d+|([^|]+)|')\n"
        "    if c and c ~= chan then others = 2 break end\n"
        "  end\n"
        "end\n"
        "return {1, 0, maxttl, 1 + others}\n",
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
