/* fanout.h - one command (or a transaction), sent to every master, whose replies may outlive its
 * owner. */
#ifndef REDLOCK_FANOUT_H
#define REDLOCK_FANOUT_H

#include "base/cmd.h"
#include "node/node.h"

typedef struct rl_fanout rl_fanout;

/* The owner's per-master handler: @r is the reply (valid during the call),
 * or NULL with @err/@why saying why the master failed. */
typedef void rl_vote_fn(void *owner, rl_fanout *f, uint32_t idx, const rl_reply *r, int err,
                        const char *why);

/* A copy of @cmd, ready to go to any of @nodes. NULL on OOM. */
rl_fanout *rl_fanout_new(rl_node *nodes, const rl_cmd *cmd);
/* The same, with an alternative @alt that the masters named by
 * rl_fanout_use_alt() get instead (the acquire's fast path and its
 * script: acquire.c). */
rl_fanout *rl_fanout_new2(rl_node *nodes, const rl_cmd *cmd, const rl_cmd *alt);
void rl_fanout_use_alt(rl_fanout *f, uint32_t idx);
/* The op (its trace id) whose round this is: named in the trace's lines
 * (trace.c). Before anything is sent. */
void rl_fanout_set_trace_op(rl_fanout *f, uint32_t op);
/* Who gets the replies (before anything is sent). */
void rl_fanout_set_owner(rl_fanout *f, rl_vote_fn *fn, void *owner);
/* What a reply that arrives after the owner detached still teaches about
 * its master (@script: the command's enum rl_script, or -1; @last, @len:
 * the command's last argument). Optional. */
typedef void rl_late_fn(rl_node *n, int script, const rl_reply *r, const char *last, size_t len);
void rl_fanout_set_late(rl_fanout *f, rl_late_fn *fn);
/* A master sent the alternative (rl_fanout_use_alt) answered @r: true if
 * the alternative could not do the job there and the command must run
 * instead (the release without Lua deleted nothing: the key may be marked
 * for its waiters; or the master lacks the command it claimed). The slot
 * then sends the command, once, and its answer is the one delivered. It
 * runs below the owner, for late answers too: a release's hand-over must
 * run even after the release decided. */
typedef bool rl_redo_fn(rl_node *n, const rl_reply *r);
void rl_fanout_set_redo(rl_fanout *f, rl_redo_fn *fn);
/* What an answer that comes after the owner decided still needs on its
 * master: masters in @mask whose answer makes @need say true are sent
 * @cmd then, nobody reading the reply (an acquire that won before those
 * masters answered: only where the attempt did not get the key does its
 * waiter leave the queue, acquire-queue.c). An answer that never comes
 * (the connection lost) sends nothing. 0, or REDLOCK_ENOMEM (nothing set:
 * the caller sends @cmd now). */
typedef bool rl_need_fn(const rl_reply *r);
int rl_fanout_set_followup(rl_fanout *f, uint32_t mask, const rl_cmd *cmd, rl_need_fn *need);
/* 0, or REDLOCK_E* (the master failed at once: no vote will come; the
 * node's errstr says why). */
int rl_fanout_send(rl_fanout *f, uint32_t idx, bool priority);
/* Master @idx gets @v (at most 23 bytes) for the command's node argument
 * (rl_cmd.node_arg) instead of the value every other master gets. Before
 * rl_fanout_send(). */
void rl_fanout_set_node_arg(rl_fanout *f, uint32_t idx, const char *v, size_t len);
/* When the command was sent to master @idx. */
rl_monotime rl_fanout_sent_us(const rl_fanout *f, uint32_t idx);
/* The owner lets go: later replies are dropped, memory goes with the last. */
void rl_fanout_detach(rl_fanout *f);
/* @cmd to the masters in @mask (of @n), nobody reading the replies: sent and
 * forgotten (a waiter's leave, a window's raise). Nothing is sent on OOM. */
void rl_fanout_fire(rl_node *nodes, uint32_t n, const rl_cmd *cmd, uint32_t mask);

#endif
