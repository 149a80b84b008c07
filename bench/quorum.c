/* quorum.c - the raw quorum: SET NX PX sent to several masters at once over
 * plain hiredis, timed to the reply a quorum needs, then DEL on them; no
 * redlock. The floor times the majority-th reply of all N. A fault row
 * times it next to its fault, so that what the fault costs the arithmetic
 * of a quorum is told apart from what it costs the library: with two of
 * five masters paused, an acquire must wait for every one of the three
 * left, which a 3-of-5 quorum never does.
 */
#include "floor.h"

#include <string.h>

#include <event2/event.h>

static void quorum_next(struct floor_state *fs);

static void quorum_on_del(redisAsyncContext *ac, void *reply, void *pd)
{
    struct floor_state *fs = pd;

    (void)ac;
    if (!floor_reply_ok(reply))
        fs->broken = 1;
    if (++fs->replies == fs->n_sel) {
        if (fs->broken)
            event_base_loopbreak(fs->base);
        else
            quorum_next(fs);
    }
}

static void quorum_on_set(redisAsyncContext *ac, void *reply, void *pd)
{
    struct floor_state *fs = pd;
    int m;

    (void)ac;
    if (!floor_reply_ok(reply))
        fs->broken = 1;
    fs->replies++;
    if (fs->replies == fs->need)
        hist_add(fs->qh, now_us() - fs->t0);
    if (fs->replies < fs->n_sel)
        return;
    if (fs->broken) {
        event_base_loopbreak(fs->base);
        return;
    }
    fs->replies = 0;
    for (m = 0; m < fs->n_sel; m++)
        if (floor_send_del(fs, fs->sel[m], fs->key, quorum_on_del, fs) != REDIS_OK)
            fs->broken = 1;
}

static void quorum_next(struct floor_state *fs)
{
    int m;

    if (now_us() >= fs->deadline || fs->qh->count >= config.max_ops || stop_requested()) {
        event_base_loopbreak(fs->base);
        return;
    }
    snprintf(fs->key, sizeof(fs->key), "rlbench:%s:floorq:%llu", config.run_id,
             (unsigned long long)fs->seq++);
    fs->replies = 0;
    fs->t0 = now_us();
    for (m = 0; m < fs->n_sel; m++)
        if (floor_send_set(fs, fs->sel[m], fs->key, quorum_on_set, fs) != REDIS_OK)
            fs->broken = 1;
}

/* Cycles on fs->sel, timing the fs->need-th reply into @h, until the
 * current phase's deadline. */
void floor_quorum_run(struct floor_state *fs, struct hist *h)
{
    fs->qh = h;
    quorum_next(fs);
    event_base_dispatch(fs->base);
}

static void on_stuck(evutil_socket_t fd, short what, void *arg)
{
    struct floor_state *fs = arg;

    (void)fd;
    (void)what;
    fs->broken = 1;
    event_base_loopbreak(fs->base);
}

/* One slice of @ms on @sel (@n masters), timing reply @need into @h. A
 * master that stops answering for 2 s more breaks the comparison off. */
static void slice(struct floor_state *fs, struct event *stuck, const int *sel, int n, int need,
                  unsigned ms, struct hist *h)
{
    struct timeval bound = { 2, (suseconds_t)ms * 1000 };

    memcpy(fs->sel, sel, (size_t)n * sizeof(*sel));
    fs->n_sel = n;
    fs->need = need;
    floor_set_phase(fs, PH_QUORUM, ms / 1000.0);
    evtimer_add(stuck, &bound);
    floor_quorum_run(fs, h);
    evtimer_del(stuck);
}

/* The raw quorum next to a fault, before it is injected: @all times the
 * majority-th reply of all N masters, @live the majority-th reply of the @k
 * masters in @keep (those the fault leaves alone; with 2 of 5 broken, every
 * one of the 3 left). In alternating 100 ms slices for
 * @seconds, so both see the same moment of a shared machine. 0, or -1 with
 * @why filled. */
int raw_quorum_compare(const int *keep, int k, double seconds, struct hist *all, struct hist *live,
                       char *why, size_t len)
{
    struct floor_state *fs = floor_open(why, len);
    struct event *stuck;
    int every[BENCH_MAX_MASTERS], m, i, rc;

    if (!fs)
        return -1;
    if (!(stuck = evtimer_new(fs->base, on_stuck, fs))) {
        snprintf(why, len, "out of memory");
        floor_close(fs);
        return -1;
    }
    for (m = 0; m < fs->n; m++)
        every[m] = m;
    for (i = 0; i < (int)(seconds * 5.0) && !fs->broken && !stop_requested(); i++) {
        slice(fs, stuck, every, fs->n, fs->n / 2 + 1, 100, all);
        slice(fs, stuck, keep, k, fs->n / 2 + 1, 100, live);
    }
    rc = fs->broken ? -1 : 0;
    if (rc)
        snprintf(why, len, "a master failed, answered oddly or stopped answering");
    event_free(stuck);
    floor_close(fs);
    return rc;
}
