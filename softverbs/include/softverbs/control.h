/* softverbs control API for in-process tests: fault injection and counters.
 *
 * Plain C.  Link softverbs_ctl_dep; it resolves the private, versioned
 * (SOFTVERBS_PRIVATE) entry points of the replacement libibverbs.so.1 at run
 * time, so a program built with it still runs (and reports "not active") on
 * the real rdma-core.  Rule grammar: see softverbs/src/faults.h.
 */
#ifndef SOFTVERBS_CONTROL_H
#define SOFTVERBS_CONTROL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when the process runs on softverbs, 0 on anything else. */
int softverbs_active(void);

/* Appends fault rules ("rule;rule").  0, -EINVAL (bad rule; *err gets a
 * message when err_len > 0) or -ENOSYS (not on softverbs). */
int softverbs_fault_add(const char* rules, char* err, size_t err_len);

/* Removes every fault rule.  0 or -ENOSYS. */
int softverbs_fault_clear(void);

/* How often fault rules took effect so far; 0 when not on softverbs. */
uint64_t softverbs_faults_fired(void);

/* Resets every established connection whose local or remote RDMA port is
 * `port` (-1: all) right now, as if the peer vanished: both sides see error
 * completions and DISCONNECTED.  Returns how many were dropped, or -ENOSYS. */
int softverbs_drop_connections(int port);

/* Writes the per-QP and per-CQ counters as JSON to path ("%p" = pid).  They
 * are kept only when SOFTVERBS_STATS is set; otherwise the lists are empty and
 * "recording" is false.  0 or -errno. */
int softverbs_stats_dump(const char* path);

#ifdef __cplusplus
}
#endif

#endif /* SOFTVERBS_CONTROL_H */
