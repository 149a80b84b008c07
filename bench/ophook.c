/* ophook.c - the library's own account of every acquire, through its op
 * hook (redlock_config.op_fn, called once per completed operation): how
 * many attempts each call made and how long it waited, as the library
 * counts them, so the rows need no bookkeeping of their own for either.
 *
 * The hook runs on the client's loop thread (a blocking client's I/O
 * thread); one struct opstats per client, read once the client is freed.
 * Calls nothing in redlock-bench but hist.c.
 */
#include "bench.h"

static void on_op(const redlock_op_info *info, void *arg)
{
    struct opstats *s = arg;

    if (info->kind != REDLOCK_OP_ACQUIRE || !__atomic_load_n(&s->on, __ATOMIC_ACQUIRE))
        return;
    s->acquires++;
    s->ok += info->status == 0;
    s->attempts += info->attempts;
    hist_add(&s->attempts_h, info->attempts);
    hist_add(&s->waited, info->waited_us);
}

/* Count into @s from the client made with @cfg; nothing is counted until
 * opstats_start(), so warm-up acquires stay out. */
void opstats_hook(struct opstats *s, redlock_config *cfg)
{
    cfg->op_fn = on_op;
    cfg->op_arg = s;
}

void opstats_start(struct opstats *s)
{
    __atomic_store_n(&s->on, 1, __ATOMIC_RELEASE);
}

void opstats_merge(struct opstats *dst, const struct opstats *src)
{
    dst->acquires += src->acquires;
    dst->ok += src->ok;
    dst->attempts += src->attempts;
    hist_merge(&dst->attempts_h, &src->attempts_h);
    hist_merge(&dst->waited, &src->waited);
}

/* "1234 acquires, 1.02 attempts each (p99 3, max 7); waited p50 83 us, ..." */
void opstats_line(char *buf, size_t len, const struct opstats *s)
{
    snprintf(buf, len, "%llu acquires, %.2f attempts each (p50 %llu, p99 %llu, max %llu); "
             "waited p50 %llu us, p99 %llu us, max %llu us",
             (unsigned long long)s->acquires,
             s->acquires ? (double)s->attempts / (double)s->acquires : 0.0,
             (unsigned long long)hist_pct(&s->attempts_h, 0.5),
             (unsigned long long)hist_pct(&s->attempts_h, 0.99),
             (unsigned long long)s->attempts_h.max, (unsigned long long)hist_pct(&s->waited, 0.5),
             (unsigned long long)hist_pct(&s->waited, 0.99), (unsigned long long)s->waited.max);
}
