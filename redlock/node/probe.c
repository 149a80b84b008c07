/* probe.c - the probes of every interval: TIME, the memory marker, CONFIG.
 *
 * One round per master per clock_probe_ms (the client's timer calls
 * rl_probe_node), each skipped while the previous one is unanswered. TIME
 * feeds drift/monitor.c; the marker and CONFIG keep ping's view fresh. What
 * a fault does to the master: docs/memory-guard.md, "What the monitor
 * catches" and "Policy: warn or exclude".
 */
#include "node/probe.h"

#include <stdio.h>

static void probe_on_time(void *arg, const rl_reply *r, int err, const char *why)
{
    (void)err;
    (void)why;
    rl_node *n = arg;
    rl_trust *t = &n->trust;
    t->probe_out = false;
    drift_sample s;
    if (!r || !rl_time_reply(r, &s.server_us))
        return;
    s.recv_us = rl_now_us();
    s.send_us = t->probe_send_us;
    s.real_mid_us = rl_realtime_us() - (int64_t)(s.recv_us - s.send_us) / 2;
    int ev = drift_monitor_add(&t->clock, &s);
    bool exclude = n->env->cfg->clock_policy == REDLOCK_CLOCK_EXCLUDE;
    if (ev == DRIFT_EV_JUMP)
        rl_node_event(n, exclude ? REDLOCK_EUNTRUSTED : 0, REDLOCK_EVENT_CLOCK_JUMP,
                      "clock jumped %+lld ms%s", (long long)(t->clock.last_jump_us / 1000),
                      exclude ? "; excluded from quorums" : "");
    else if (ev == DRIFT_EV_RATE)
        rl_node_event(n, exclude ? REDLOCK_EUNTRUSTED : 0, REDLOCK_EVENT_CLOCK_RATE,
                      "clock runs at %.4f..%.4f of ours, beyond drift factor %g%s",
                      t->clock.rate_lo, t->clock.rate_hi, n->env->cfg->drift_factor,
                      exclude ? "; excluded from quorums" : "");
}

void rl_probe_node(rl_node *n, bool clock)
{
    if (n->state != RL_NODE_UP)
        return;
    if (!n->asking_memory)
        rl_node_ask_memory(n, n->conn);
    if (!clock || n->trust.probe_out)
        return;
    static const char *argv[1] = { "TIME" };
    static const size_t lens[1] = { 4 };
    n->trust.probe_send_us = rl_now_us();
    if (rl_node_send(n, probe_on_time, n, 1, argv, lens, false) == 0)
        n->trust.probe_out = true;
}

bool rl_time_reply(const rl_reply *r, int64_t *ret_us)
{
    int64_t part[2];
    if (!r || rl_reply_type(r) != RL_REPLY_ARRAY || rl_reply_elements(r) != 2)
        return false;
    for (size_t i = 0; i < 2; i++) {
        const rl_reply *e = rl_reply_element(r, i);
        size_t len;
        const char *s = rl_reply_str(e, &len);
        int64_t v = 0;
        if (rl_reply_type(e) != RL_REPLY_STRING || len == 0 || len > 13)
            return false;
        for (size_t k = 0; k < len; k++) {
            if (s[k] < '0' || s[k] > '9')
                return false;
            v = v * 10 + (s[k] - '0');
        }
        part[i] = v;
    }
    if (part[0] > ((int64_t)1 << 40) || part[1] > 999999)
        return false;
    *ret_us = part[0] * 1000000 + part[1];
    return true;
}
