/* ophook.c - the library's own account of every acquire, through its op
 * hook (redlock_config.op_fn, called once per completed operation): how
 * many attempts each call made and how long it waited, as the library
 * counts them, so the rows need no bookkeeping of their own for either.
 *
 * One struct opstats per client, read once it is freed; calls only hist.c.
 * Threads, and each master's vote: bench/RESULTS.md, "How the rows measure".
 */
#include "bench.h"

static void on_op(redlock_client *c, int status, const redlock_op_info *info,
                  const redlock_error *err, void *arg)
{
    struct opstats *s = arg;
    uint32_t m;

    (void)c;
    (void)status;
    (void)err;
    if (info->kind != REDLOCK_OP_ACQUIRE || !__atomic_load_n(&s->on, __ATOMIC_ACQUIRE))
        return;
    s->acquires++;
    s->ok += info->status == 0;
    s->attempts += info->attempts;
    hist_add(&s->attempts_h, info->attempts);
    hist_add(&s->waited, info->waited_us);
    for (m = 0;
         info->outcome && m < redlock_outcome_masters(info->outcome) && m < BENCH_MAX_MASTERS; m++)
        if ((unsigned)redlock_outcome_vote(info->outcome, m)->kind <= REDLOCK_VOTE_EXCLUDED)
            s->votes[m][redlock_outcome_vote(info->outcome, m)->kind]++;
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
    int m, k;

    dst->acquires += src->acquires;
    dst->ok += src->ok;
    dst->attempts += src->attempts;
    hist_merge(&dst->attempts_h, &src->attempts_h);
    hist_merge(&dst->waited, &src->waited);
    for (m = 0; m < BENCH_MAX_MASTERS; m++)
        for (k = 0; k <= REDLOCK_VOTE_EXCLUDED; k++)
            dst->votes[m][k] += src->votes[m][k];
}

/* "1234 acquires, 1.02 attempts each (p99 3, max 7); waited p50 83 us, ..." */
void opstats_line(char *buf, size_t len, const struct opstats *s)
{
    snprintf(buf, len,
             "%llu acquires, %.2f attempts each (p50 %llu, p99 %llu, max %llu); "
             "waited p50 %llu us, p99 %llu us, max %llu us",
             (unsigned long long)s->acquires,
             s->acquires ? (double)s->attempts / (double)s->acquires : 0.0,
             (unsigned long long)hist_pct(&s->attempts_h, 0.5),
             (unsigned long long)hist_pct(&s->attempts_h, 0.99),
             (unsigned long long)s->attempts_h.max, (unsigned long long)hist_pct(&s->waited, 0.5),
             (unsigned long long)hist_pct(&s->waited, 0.99), (unsigned long long)s->waited.max);
}

/* ":12203 pending 510, down 12718; :12204 ..." for the masters that failed
 * or were left out of some deciding attempt (down, timeout, error, excluded,
 * not asked); "" when none was. A master still pending at the decision (the
 * early quorum did not wait for it) or holding the key is how a healthy
 * master looks, and alone does not list it. */
void opstats_votes_line(char *buf, size_t len, const struct opstats *s)
{
    size_t used = 0;
    int m, k, first;

    buf[0] = '\0';
    for (m = 0; m < config.n_masters && used < len; m++) {
        uint64_t other = 0;

        for (k = 0; k <= REDLOCK_VOTE_EXCLUDED; k++)
            if (k != REDLOCK_VOTE_OK && k != REDLOCK_VOTE_PENDING && k != REDLOCK_VOTE_HELD)
                other += s->votes[m][k];
        if (!other)
            continue;
        used += (size_t)snprintf(buf + used, len - used, "%s:%d", used ? "; " : "", config.port[m]);
        for (k = 0, first = 1; k <= REDLOCK_VOTE_EXCLUDED && used < len; k++) {
            if (!s->votes[m][k])
                continue;
            used += (size_t)snprintf(buf + used, len - used, "%s %s %llu", first ? "" : ",",
                                     redlock_vote_kind_name(k), (unsigned long long)s->votes[m][k]);
            first = 0;
        }
    }
}
