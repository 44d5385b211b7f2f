/* gpusched/c/policy.h — placement policies and orders written in C: callbacks, for the C API and for
 * plugins.
 *
 * A policy is a node score (docs/policies.md): gpusched filters the nodes that fit the task, calls
 * `score` for each, and takes the highest; ties go to the lowest node id or, with
 * GPUSCHED_POLICY_TIES_SEEDED, to the first node of the seeded node order of the FGD paper's protocol.
 * Optionally `pick_gpus` chooses the GPUs on the chosen node (else gpusched's default GPU step).
 *
 * Two ways in, the same definition:
 *  - the C API: gpusched_state_add_policy(state, &def, &err) (gpusched.h), then the policy's name
 *    wherever a call takes a policy name on that state;
 *  - a plugin: a shared library exporting
 *        int gpusched_plugin_policies(uint32_t abi, const gpusched_policy_def** defs, size_t* count);
 *    which sets *defs to an array of *count definitions (static storage: they must stay valid while the
 *    program runs) and returns 0, or returns non-zero when it cannot serve ABI version `abi`. Load it
 *    with `gpusched ... --plugin ./libmine.so`, gpusched_state_load_plugin, or
 *    gpusched.load_plugin in Python. A plugin links nothing of gpusched: this header is all it needs.
 *
 * The views are valid during the call only (pointers into gpusched's state: read, never keep).
 * Callbacks run on the caller's thread; bench-packing runs seeds on several threads at once unless the
 * policy leaves out GPUSCHED_POLICY_THREAD_SAFE.
 *
 * C99; compiles as C and as C++. */
#ifndef GPUSCHED_C_POLICY_H
#define GPUSCHED_C_POLICY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of the structs below; a plugin's entry point is given it. */
#define GPUSCHED_POLICY_ABI 1u

/* A node, as it is now. */
typedef struct gpusched_node_view {
  uint32_t id;                      /* the node's index in the cluster */
  const char* name;                 /* NUL-terminated */
  int64_t cpu_milli_capacity, cpu_milli_free;
  int64_t memory_capacity, memory_free;   /* bytes */
  uint32_t gpu_count;
  uint32_t gpus_idle;               /* GPUs with nothing allocated (healthy ones) */
  const int32_t* gpu_free_milli;    /* per GPU, gpu_count entries: free share, 0..1000 (0 when unhealthy) */
  const uint8_t* gpu_model;         /* per GPU: the model's id (an index into model_names) */
  const int64_t* gpu_free_memory;   /* per GPU: free memory in bytes (0 when unhealthy) */
  const char* const* model_names;   /* the cluster's GPU models by id */
  uint32_t model_count;
} gpusched_node_view;

/* One task of a job (every replica of a group has the same). */
typedef struct gpusched_task_view {
  int64_t cpu_milli;
  int64_t memory;          /* bytes */
  int32_t gpus;            /* GPUs it takes (0: CPU-only) */
  int32_t gpu_milli;       /* per GPU: 1000 whole, less is a share of one GPU */
  int64_t gpu_memory;      /* bytes per GPU (0: no requirement) */
  uint64_t gpu_models;     /* allowed models: bit i = model id i (all ones: any) */
} gpusched_task_view;

/* What score returns. */
#define GPUSCHED_SCORE_OK 0       /* *score is set: higher is better */
#define GPUSCHED_SCORE_REFUSE 1   /* this node must not take the task */
/* anything else: the policy failed; the call in progress ends with an error naming the policy and the
 * value returned (and `message`, when the callback set it: a static or long-lived string) */

typedef int (*gpusched_score_fn)(void* user, const gpusched_node_view* node, const gpusched_task_view* task,
                                 int64_t* score, const char** message);
/* Chooses the GPUs on `node` for `task` (task->gpus of them; one for a share): writes their indices to
 * gpus[0..n) and returns GPUSCHED_SCORE_OK, or GPUSCHED_SCORE_REFUSE, or an error like score. The
 * choice is checked; a GPU that cannot take the task is an error of the policy. */
typedef int (*gpusched_pick_gpus_fn)(void* user, const gpusched_node_view* node, const gpusched_task_view* task,
                                     uint32_t* gpus, uint32_t n, const char** message);

#define GPUSCHED_POLICY_TIES_SEEDED 1u  /* ties to the seeded node order (else the lowest node id) */
#define GPUSCHED_POLICY_MEMOIZE 2u      /* the score depends only on the node's resources (capacities, free
                                           CPU and memory, per GPU free share, memory, model) and the
                                           task: scored once per distinct (node state, task) */
#define GPUSCHED_POLICY_THREAD_SAFE 4u  /* the callbacks may run on several threads at once */

typedef struct gpusched_policy_def {
  uint32_t abi;                 /* GPUSCHED_POLICY_ABI */
  const char* name;             /* the name paths resolve ("my-best-fit"); not a built-in's */
  const char* summary;          /* one line (may be NULL) */
  uint32_t flags;               /* GPUSCHED_POLICY_* */
  gpusched_score_fn score;      /* required */
  gpusched_pick_gpus_fn pick_gpus;  /* NULL: gpusched's default GPU step */
  void* user;                   /* given to every callback */
} gpusched_policy_def;

/* The plugin entry point's name and type. */
#define GPUSCHED_PLUGIN_ENTRY "gpusched_plugin_policies"
typedef int (*gpusched_plugin_entry_fn)(uint32_t abi, const gpusched_policy_def** defs, size_t* count);

/* ---- Orders: which pending job of a queue goes first, which running jobs are evicted first ----
 *
 * A job order gives each pending job a key, lower first (the default order, priority then submit
 * time, breaks equal keys); the key must depend on the job's facts only, not the clock. A victim order
 * gives each candidate victim of a preemption a cost >= 0; among the sets of candidates that let the
 * waiting job start, the cheapest is evicted (docs/policies.md). The rules of who may be evicted do not
 * change. An order's callbacks return GPUSCHED_SCORE_OK with *key / *cost set; anything else (or a
 * negative cost) is a failure of the order: the cycle ends with an error naming it, keeping nothing.
 *
 * Ways in, as for policies: gpusched_state_add_order (gpusched.h), then "order" / "victim_order" in a
 * cycle's options; or a plugin exporting
 *     int gpusched_plugin_orders(uint32_t abi, const gpusched_order_def** defs, size_t* count);
 * (a plugin may export this, gpusched_plugin_policies, or both); then `gpusched cycle --order NAME
 * --victim-order NAME --plugin ./libmine.so`, or `simulate` likewise. */

/* A pending job. */
typedef struct gpusched_job_view {
  const char* name;           /* NUL-terminated */
  const char* queue;          /* "" for none */
  int32_t priority;
  int32_t restarts;           /* failures it was restarted after */
  int64_t submit_time;
  int64_t runtime_estimate;   /* seconds; 0: unknown */
  int64_t tasks;              /* all replicas of all groups */
  int64_t gpu_milli;          /* milli-GPUs over all tasks (1000 per whole GPU) */
} gpusched_job_view;

/* A candidate victim: a running job evicted whole, or the tasks an elastic job would shed. */
typedef struct gpusched_victim_view {
  const char* name;
  const char* queue;
  int32_t priority;
  uint32_t whole;             /* 1: evicted whole; 0: sheds tasks [first_task, first_task + task_count) */
  uint32_t first_task, task_count;
  int64_t start_time, now;
  int64_t lost_milli_gpu_seconds;     /* work since its last checkpoint */
  int64_t restart_milli_gpu_seconds;  /* its restart cost (0 for a shrink) */
  int64_t freed_milli_gpu;            /* what evicting it frees */
} gpusched_victim_view;

typedef int (*gpusched_order_key_fn)(void* user, const gpusched_job_view* job, int64_t* key, const char** message);
typedef int (*gpusched_victim_cost_fn)(void* user, const gpusched_victim_view* victim, int64_t* cost,
                                       const char** message);

typedef struct gpusched_order_def {
  uint32_t abi;                        /* GPUSCHED_POLICY_ABI */
  const char* name;                    /* not a built-in order's name */
  const char* summary;                 /* one line (may be NULL) */
  uint32_t flags;                      /* 0 (reserved) */
  gpusched_order_key_fn key;           /* NULL: not a job order */
  gpusched_victim_cost_fn victim_cost; /* NULL: not a victim order (at least one of the two) */
  void* user;
} gpusched_order_def;

#define GPUSCHED_PLUGIN_ORDERS_ENTRY "gpusched_plugin_orders"
typedef int (*gpusched_plugin_orders_fn)(uint32_t abi, const gpusched_order_def** defs, size_t* count);

#ifdef __cplusplus
}
#endif

#endif /* GPUSCHED_C_POLICY_H */
