/* examples/policies/orders_plugin.c — a job order and a victim order written as a C plugin.
 *
 * Build:  cc -shared -fPIC -I include examples/policies/orders_plugin.c -o liborders_plugin.so
 * Use:    gpusched cycle ... --plugin ./liborders_plugin.so --order c-shortest-first --victim-order c-newest-first
 *         gpusched simulate ... --plugin ./liborders_plugin.so --order c-shortest-first
 *
 * They are gpusched's built-in "shortest-first" job order and "newest-first" victim order
 * (include/gpusched/scheduler/orders.hpp), decision for decision: tests/sim/policy_plugin_test.cpp
 * simulates a contended trace with each and compares every job's start and end.
 *   c-shortest-first  key = the job's runtime estimate; jobs without one (0) last;
 *   c-newest-first    cost = the seconds the candidate has run (the most recent start goes first).
 * Only gpusched/c/policy.h is needed: a plugin links nothing of gpusched. */
#include "gpusched/c/policy.h"

static int shortest_first(void* user, const gpusched_job_view* job, int64_t* key, const char** message) {
  (void)user;
  (void)message;
  *key = job->runtime_estimate > 0 ? job->runtime_estimate : INT64_MAX;
  return GPUSCHED_SCORE_OK;
}

static int newest_first(void* user, const gpusched_victim_view* victim, int64_t* cost, const char** message) {
  (void)user;
  (void)message;
  *cost = victim->now > victim->start_time ? victim->now - victim->start_time : 0;
  return GPUSCHED_SCORE_OK;
}

static const gpusched_order_def orders[] = {
    {GPUSCHED_POLICY_ABI, "c-shortest-first", "shortest runtime estimate first, as a C plugin", 0, shortest_first, 0, 0},
    {GPUSCHED_POLICY_ABI, "c-newest-first", "the most recently started victims first, as a C plugin", 0, 0,
     newest_first, 0},
};

#if defined(__GNUC__)
__attribute__((visibility("default")))
#endif
int gpusched_plugin_orders(uint32_t abi, const gpusched_order_def** defs, size_t* count) {
  if (abi != GPUSCHED_POLICY_ABI) return 1;
  *defs = orders;
  *count = sizeof orders / sizeof orders[0];
  return 0;
}
