/* monitor.c - per-master clock rate and jump detection from TIME samples.
 *
 * The bounds are exact for what a round trip can tell (see monitor.h), so a
 * loaded machine or a slow network widens them and delays detection but
 * never produces a false alarm. The window slides: a master that behaves
 * again is trusted once its bad samples have left the window and a further
 * readmit period has passed without a fault.
 */
#include "monitor.h"

#include <string.h>

void drift_monitor_init(drift_monitor *m, double factor, uint32_t jump_ms, uint32_t window_ms,
                        uint32_t readmit_ms)
{
    memset(m, 0, sizeof(*m));
    m->factor = factor;
    m->jump_us = (uint64_t)jump_ms * 1000;
    m->window_us = (uint64_t)window_ms * 1000;
    m->readmit_us = (uint64_t)readmit_ms * 1000;
}

void drift_monitor_reset(drift_monitor *m)
{
    m->head = m->count = 0;
    m->rate_lo = m->rate_hi = 0;
    m->rate_bad = false;
}

static const drift_sample *at(const drift_monitor *m, unsigned i)
{
    return &m->s[(m->head + i) % DRIFT_WINDOW_MAX];
}

/* Rate interval between a (older) and b; false if they are too close to
 * bound anything (b's send not after a's receive). */
static bool rate_bounds(const drift_sample *a, const drift_sample *b, double *lo, double *hi)
{
    if (b->send_us <= a->recv_us)
        return false;
    double ds = (double)(b->server_us - a->server_us);
    double max_dt = (double)(b->recv_us - a->send_us);
    double min_dt = (double)(b->send_us - a->recv_us);
    *lo = ds / max_dt;
    *hi = ds / min_dt;
    if (*lo > *hi) { /* ds < 0: the master went backwards */
        double t = *lo;
        *lo = *hi;
        *hi = t;
    }
    return true;
}

int drift_monitor_add(drift_monitor *m, const drift_sample *s)
{
    int ev = DRIFT_EV_NONE;
    m->samples++;
    m->offset_us = s->server_us - s->real_mid_us;

    /* Jump: compare with the previous sample. The master's step must lie in
     * [min_dt * (1 - f) - jump, max_dt * (1 + f) + jump]. */
    if (m->count > 0) {
        const drift_sample *p = at(m, m->count - 1);
        int64_t ds = s->server_us - p->server_us;
        double max_dt = (double)(s->recv_us - p->send_us);
        double min_dt = s->send_us > p->recv_us ? (double)(s->send_us - p->recv_us) : 0;
        double hi = max_dt * (1 + m->factor) + (double)m->jump_us;
        double lo = min_dt * (1 - m->factor) - (double)m->jump_us;
        if ((double)ds > hi || (double)ds < lo) {
            m->jumps++;
            m->last_jump_us =
                ds - (int64_t)((double)(s->recv_us - p->send_us + (s->send_us - p->recv_us)) / 2);
            m->bad_until_us = s->recv_us + m->readmit_us;
            /* The window is kept: a clock that runs ten times fast "jumps"
             * at every sample, and its rate is still worth reporting. A
             * one-off jump shows as a rate fault until it leaves the window,
             * which keeps the master untrusted a while longer: fine. */
            ev = DRIFT_EV_JUMP;
        }
    }

    /* Append, then forget samples older than the window (keep >= 1). */
    if (m->count == DRIFT_WINDOW_MAX) {
        m->head = (m->head + 1) % DRIFT_WINDOW_MAX;
        m->count--;
    }
    m->s[(m->head + m->count) % DRIFT_WINDOW_MAX] = *s;
    m->count++;
    while (m->count > 1 && s->recv_us - at(m, 0)->recv_us > m->window_us) {
        m->head = (m->head + 1) % DRIFT_WINDOW_MAX;
        m->count--;
    }

    /* Rate: oldest sample in the window against this one. */
    double lo, hi;
    if (m->count > 1 && rate_bounds(at(m, 0), s, &lo, &hi)) {
        m->rate_lo = lo;
        m->rate_hi = hi;
        bool bad = lo > 1 + m->factor || hi < 1 - m->factor;
        if (bad) {
            m->bad_until_us = s->recv_us + m->readmit_us;
            if (!m->rate_bad) {
                m->rate_faults++;
                if (ev == DRIFT_EV_NONE)
                    ev = DRIFT_EV_RATE;
            }
        }
        m->rate_bad = bad;
    }
    return ev;
}

bool drift_monitor_trusted(const drift_monitor *m, uint64_t now_us)
{
    return now_us >= m->bad_until_us;
}
