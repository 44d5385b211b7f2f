/* examples/policies/best_fit_plugin.c — gpusched's built-in best-fit, written as a C plugin.
 *
 * Build:  cc -shared -fPIC -I include examples/policies/best_fit_plugin.c -o libbest_fit_plugin.so
 * Use:    gpusched place --cluster c.json --jobs j.json --plugin ./libbest_fit_plugin.so --policy c-best-fit
 *
 * It makes the decisions of the built-in "best-fit" (include/gpusched/packing/policy.hpp), task for
 * task: tests/io/policy_plugin_test.cpp replays a slice of the Alibaba trace with both and compares
 * every node and GPU chosen. The rule, as a score (higher is better; ties go to the lowest node id):
 *   whole GPUs   the fewest idle GPUs left on the node;
 *   a GPU share  the least share left on the tightest GPU that fits, then the fewest idle GPUs;
 *   CPU only     the node with the fewest GPUs (GPU nodes stay free for GPU work), then the least
 *                CPU left.
 * and the GPUs: the lowest-index idle GPUs, or for a share the GPU with the least free share that fits.
 * Only gpusched/c/policy.h is needed: a plugin links nothing of gpusched. */
#include "gpusched/c/policy.h"

static int allowed(const gpusched_node_view* node, const gpusched_task_view* task, uint32_t g) {
  return ((task->gpu_models >> node->gpu_model[g]) & 1u) && node->gpu_free_memory[g] >= task->gpu_memory;
}

static int shares_gpu(const gpusched_task_view* task) {
  return task->gpus == 1 && task->gpu_milli > 0 && task->gpu_milli < 1000;
}

/* The GPU with the least free share that still fits the task (lowest index on ties); -1 if none. */
static int32_t tightest_gpu(const gpusched_node_view* node, const gpusched_task_view* task) {
  int32_t best = -1;
  for (uint32_t g = 0; g < node->gpu_count; ++g) {
    if (node->gpu_free_milli[g] < task->gpu_milli || !allowed(node, task, g)) continue;
    if (best < 0 || node->gpu_free_milli[g] < node->gpu_free_milli[best]) best = (int32_t)g;
  }
  return best;
}

static int score(void* user, const gpusched_node_view* node, const gpusched_task_view* task, int64_t* out,
                 const char** message) {
  (void)user;
  (void)message;
  if (shares_gpu(task)) {
    const int32_t g = tightest_gpu(node, task);
    const int64_t left = g < 0 ? 1001 : node->gpu_free_milli[g] - task->gpu_milli;
    *out = -(left * 100000 + node->gpus_idle);
  } else if (task->gpus > 0 && task->gpu_milli > 0) {
    *out = -((int64_t)node->gpus_idle - task->gpus);
  } else {
    *out = -((int64_t)node->gpu_count * ((int64_t)1 << 40) + node->cpu_milli_free - task->cpu_milli);
  }
  return GPUSCHED_SCORE_OK;
}

static int pick_gpus(void* user, const gpusched_node_view* node, const gpusched_task_view* task, uint32_t* gpus,
                     uint32_t n, const char** message) {
  (void)user;
  if (shares_gpu(task)) {
    const int32_t g = tightest_gpu(node, task);
    if (g < 0) return GPUSCHED_SCORE_REFUSE;
    gpus[0] = (uint32_t)g;
    return GPUSCHED_SCORE_OK;
  }
  uint32_t taken = 0;
  for (uint32_t g = 0; g < node->gpu_count && taken < n; ++g)
    if (node->gpu_free_milli[g] == 1000 && allowed(node, task, g)) gpus[taken++] = g;
  if (taken < n) {
    *message = "fewer idle GPUs than the task needs";
    return -1;
  }
  return GPUSCHED_SCORE_OK;
}

static const gpusched_policy_def policies[] = {
    {GPUSCHED_POLICY_ABI, "c-best-fit", "best-fit as a C plugin (examples/policies/best_fit_plugin.c)",
     GPUSCHED_POLICY_THREAD_SAFE, score, pick_gpus, 0},
};

#if defined(__GNUC__)
__attribute__((visibility("default")))
#endif
int gpusched_plugin_policies(uint32_t abi, const gpusched_policy_def** defs, size_t* count) {
  if (abi != GPUSCHED_POLICY_ABI) return 1;
  *defs = policies;
  *count = sizeof policies / sizeof policies[0];
  return 0;
}
