/* gpusched/c/gpusched.h — the C API of gpusched (shared library gpusched_c, CMake target gpusched::c).
 *
 * For orchestrators and tools written in C, Go (cgo), Rust, ... that cannot use the C++ headers. It is a
 * thin layer over the same library: the cluster state is the one ClusterState, documents are read by
 * the same JSON readers (docs/formats.md, docs/fairness.md), decisions come from the same policies.
 *
 *   gpusched_error err;
 *   gpusched_state* state = NULL;
 *   if (gpusched_state_from_file("cluster.json", &state, &err) != GPUSCHED_OK) {
 *     fprintf(stderr, "%s\n", err.message);     // "cluster.json: nodes[3].gpus: expected ..."
 *     return 1;
 *   }
 *   gpusched_jobs* jobs = NULL;  ... gpusched_jobs_from_file("jobs.json", &jobs, &err) ...
 *   gpusched_result* r = NULL;
 *   gpusched_place(state, jobs, 0, "best-fit", 0, &r, &err);
 *   if (gpusched_result_verdict(r) == GPUSCHED_PLACED) { ... gpusched_result_task(r, i, &task) ... }
 *   else puts(gpusched_result_message(r));     // "group worker replica 0: 0/3 nodes: ..."
 *   gpusched_result_free(r); gpusched_jobs_free(jobs); gpusched_state_free(state);
 *
 * The same state and jobs also feed the fair-share order (gpusched_fairshare) and one scheduling
 * cycle over running and pending jobs (gpusched_cycle: starts, evictions, why the others wait).
 *
 * Rules (docs/c-api.md says more):
 *  - Every call that can fail returns a gpusched_status and, when `err` is not NULL, fills the
 *    caller's gpusched_error with the same code and a message naming the field and value. No C++
 *    exception ever crosses this interface; no global mutable state (errors are per call).
 *  - Every handle a call gives out (`**out`) is the caller's and is freed by its own _free function
 *    (all accept NULL). Strings returned by accessors belong to the handle and live as long as it.
 *  - Threads: different handles may be used from different threads at once; one handle must not be
 *    used by two threads at once when one of them changes it (gpusched_place changes the state).
 *  - Stability: within one major version, functions, enumerators and struct layouts are only ever
 *    added (never changed or removed); GPUSCHED_C_API_VERSION grows with each addition.
 *
 * C99; compiles as C and as C++. */
#ifndef GPUSCHED_C_GPUSCHED_H
#define GPUSCHED_C_GPUSCHED_H

#include <stddef.h>
#include <stdint.h>

#include "gpusched/c/policy.h"

#if defined(_WIN32) && defined(GPUSCHED_C_BUILDING)
#  define GPUSCHED_C_EXPORT __declspec(dllexport)
#elif defined(_WIN32)
#  define GPUSCHED_C_EXPORT __declspec(dllimport)
#elif defined(__GNUC__)
#  define GPUSCHED_C_EXPORT __attribute__((visibility("default")))
#else
#  define GPUSCHED_C_EXPORT
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The C API's own version: 1 for the first release; grows by one with every addition.
 * 2: the scheduling cycle (gpusched_cycle and the gpusched_cycle_result accessors).
 * 3: cluster events (gpusched_state_cordon ... gpusched_state_set_label) and the state's flags.
 * 4: gpusched_release (a placed job's tasks given back when it finishes).
 * 5: the scheduler session (gpusched_session_*: a scheduler kept across cycles) and
 *    GPUSCHED_CYCLE_DECISIONS_ONLY.
 * 6: Slurm state in (gpusched_state_from_slurm, gpusched_cycle_slurm).
 * 7: policies of the caller's (gpusched_state_add_policy, gpusched_state_load_plugin, gpusched/c/policy.h),
 *    GPUSCHED_ERROR_POLICY, and "policy" / "seed" in a cycle's options.
 * 8: orders of the caller's (gpusched_state_add_order; plugins' GPUSCHED_PLUGIN_ORDERS_ENTRY), and
 *    "order" / "victim_order" in a cycle's options.
 * 9: GPUSCHED_CYCLE_ACTIONS_ONLY. */
#define GPUSCHED_C_API_VERSION 9

/* ---- errors ------------------------------------------------------------------------------ */

typedef enum gpusched_status {
  GPUSCHED_OK = 0,
  GPUSCHED_ERROR_INVALID_ARGUMENT = 1, /* a NULL handle or pointer, an index out of range */
  GPUSCHED_ERROR_INVALID_INPUT = 2,    /* a document or C array with a bad field (the message names it) */
  GPUSCHED_ERROR_PARSE = 3,            /* malformed text (JSON) */
  GPUSCHED_ERROR_UNKNOWN_NAME = 4,     /* an unknown policy, GPU model, queue, job name ... */
  GPUSCHED_ERROR_IO = 5,               /* a file that cannot be read */
  GPUSCHED_ERROR_LIMIT = 6,            /* an input over a reader's size or depth bound, an overflow */
  GPUSCHED_ERROR_STATE = 7,            /* an operation the cluster state refuses */
  GPUSCHED_ERROR_OUT_OF_MEMORY = 8,
  GPUSCHED_ERROR_INTERNAL = 9,         /* a bug in gpusched: please report it with the message */
  GPUSCHED_ERROR_POLICY = 10           /* a policy of the caller's (gpusched/c/policy.h) failed: its callback
                                          returned an error or chose GPUs that cannot take the task; the
                                          call changed nothing */
} gpusched_status;

/* Filled by a failing call (code and message); on success `code` is GPUSCHED_OK and `message` "".
 * A message longer than the buffer is cut and ends with "...". */
#define GPUSCHED_ERROR_MESSAGE_SIZE 1024
typedef struct gpusched_error {
  gpusched_status code;
  char message[GPUSCHED_ERROR_MESSAGE_SIZE];
} gpusched_error;

/* "ok", "invalid_argument", "invalid_input", ... (static strings). */
GPUSCHED_C_EXPORT const char* gpusched_status_name(gpusched_status code);

/* ---- version ----------------------------------------------------------------------------- */

/* The library's version, "MAJOR.MINOR.PATCH" (static string), and GPUSCHED_C_API_VERSION of the
 * library actually loaded (may be newer than the header a program was compiled with). */
GPUSCHED_C_EXPORT const char* gpusched_version(void);
GPUSCHED_C_EXPORT int gpusched_c_api_version(void);

/* ---- cluster state ----------------------------------------------------------------------- */

typedef struct gpusched_state gpusched_state;

/* A cluster document (docs/formats.md) as text or a file. */
GPUSCHED_C_EXPORT gpusched_status gpusched_state_from_json(const char* json_text, gpusched_state** out,
                                                            gpusched_error* err);
GPUSCHED_C_EXPORT gpusched_status gpusched_state_from_file(const char* path, gpusched_state** out,
                                                            gpusched_error* err);

/* One node for gpusched_state_from_nodes: an idle node with `gpu_count` GPUs of `gpu_model` (a name
 * or alias the built-in registry knows: "A100-80GB", "a100", "H100", "T4", ...; NULL or "" when
 * gpu_count is 0). */
typedef struct gpusched_node {
  const char* name;
  int64_t cpu_milli;     /* CPU capacity in milli-cores (8 cores = 8000) */
  int64_t memory_bytes;  /* memory capacity */
  const char* gpu_model;
  uint32_t gpu_count;
} gpusched_node;

GPUSCHED_C_EXPORT gpusched_status gpusched_state_from_nodes(const gpusched_node* nodes, size_t count,
                                                             gpusched_state** out, gpusched_error* err);
GPUSCHED_C_EXPORT void gpusched_state_free(gpusched_state* state);

/* Queries (0 / NULL for a NULL state or an index out of range). */
GPUSCHED_C_EXPORT size_t gpusched_state_node_count(const gpusched_state* state);
GPUSCHED_C_EXPORT const char* gpusched_state_node_name(const gpusched_state* state, size_t node);
GPUSCHED_C_EXPORT uint32_t gpusched_state_gpu_count(const gpusched_state* state, size_t node);
/* Whole idle GPUs on the node and free GPU share in milli-GPU (a half-used GPU counts 500). */
GPUSCHED_C_EXPORT uint32_t gpusched_state_idle_gpus(const gpusched_state* state, size_t node);
GPUSCHED_C_EXPORT int64_t gpusched_state_free_gpu_milli(const gpusched_state* state, size_t node);
GPUSCHED_C_EXPORT int64_t gpusched_state_free_cpu_milli(const gpusched_state* state, size_t node);
/* Since API version 3. 1 when the node takes new work (not cordoned), is up (not failed), the GPU is
 * healthy, the GPU is in MIG mode; 0 otherwise (and for a NULL state or an index out of range). */
GPUSCHED_C_EXPORT int gpusched_state_schedulable(const gpusched_state* state, size_t node);
GPUSCHED_C_EXPORT int gpusched_state_healthy(const gpusched_state* state, size_t node);
GPUSCHED_C_EXPORT int gpusched_state_gpu_healthy(const gpusched_state* state, size_t node, uint32_t gpu);
GPUSCHED_C_EXPORT int gpusched_state_mig_mode(const gpusched_state* state, size_t node, uint32_t gpu);
/* Grows with every change of the state (placements, cycles, events); 0 for NULL. */
GPUSCHED_C_EXPORT uint64_t gpusched_state_generation(const gpusched_state* state);

/* ---- cluster events (API version 3) ------------------------------------------------------- */

/* The cluster changed: update the state in place instead of building it again (the C++ ClusterState's
 * events, docs/c-api.md). `node` is an index below gpusched_state_node_count. An event the state
 * refuses changes nothing and returns GPUSCHED_ERROR_STATE with the reason (MIG mode on a GPU that
 * holds work ...); an index out of range is GPUSCHED_ERROR_INVALID_ARGUMENT. An event repeated (a
 * cordoned node cordoned again) changes nothing. */

/* Cordon (schedulable 0: the node takes no new work, its running work stays) or uncordon (1). */
GPUSCHED_C_EXPORT gpusched_status gpusched_state_cordon(gpusched_state* state, size_t node, int cordoned,
                                                         gpusched_error* err);
/* A node failure (healthy 0: it takes no new work) or its recovery (1). Events never release work:
 * what ran on the node stays reserved, as Kubernetes keeps a NotReady node's pods until they are
 * evicted; the GPU share it holds (milli-GPU) is written to `*held_gpu_milli` when that is not NULL,
 * and a later gpusched_cycle's running list says what still runs. */
GPUSCHED_C_EXPORT gpusched_status gpusched_state_set_node_health(gpusched_state* state, size_t node, int healthy,
                                                                  int64_t* held_gpu_milli, gpusched_error* err);
/* One GPU unhealthy (0: no new work on it) or healthy again (1). */
GPUSCHED_C_EXPORT gpusched_status gpusched_state_set_gpu_health(gpusched_state* state, size_t node, uint32_t gpu,
                                                                 int healthy, gpusched_error* err);
/* MIG mode on (1: the GPU then takes MIG instances only, none yet) or off (0), on an idle GPU, as
 * `nvidia-smi -i <gpu> -mig 1|0` needs. */
GPUSCHED_C_EXPORT gpusched_status gpusched_state_set_mig_mode(gpusched_state* state, size_t node, uint32_t gpu,
                                                               int enabled, gpusched_error* err);
/* Sets one node label (`value` NULL removes it): node selectors and topology levels read labels. */
GPUSCHED_C_EXPORT gpusched_status gpusched_state_set_label(gpusched_state* state, size_t node, const char* key,
                                                            const char* value, gpusched_error* err);

/* ---- jobs -------------------------------------------------------------------------------- */

typedef struct gpusched_jobs gpusched_jobs;

/* A jobs document (docs/formats.md: {"jobs": [...]} or an array) as text or a file. */
GPUSCHED_C_EXPORT gpusched_status gpusched_jobs_from_json(const char* json_text, gpusched_jobs** out,
                                                           gpusched_error* err);
GPUSCHED_C_EXPORT gpusched_status gpusched_jobs_from_file(const char* path, gpusched_jobs** out, gpusched_error* err);

/* An empty list, filled with gpusched_jobs_add. */
GPUSCHED_C_EXPORT gpusched_status gpusched_jobs_new(gpusched_jobs** out, gpusched_error* err);

/* One job of one task group: `replicas` tasks each asking `cpu_milli`, `memory_bytes` and `gpus` GPUs
 * (gpu_milli: the share of each GPU in milli-GPU, 1000 = whole; a share below 1000 needs gpus = 1),
 * optionally only on GPUs of `gpu_model` (NULL or "" = any). */
typedef struct gpusched_job_spec {
  const char* name;
  const char* queue;  /* NULL or "" = "default" */
  int32_t priority;   /* the job's own (a queue's default priority class does not apply) */
  int32_t replicas;
  int64_t cpu_milli;
  int64_t memory_bytes;
  int32_t gpus;
  int32_t gpu_milli;
  const char* gpu_model;
} gpusched_job_spec;

GPUSCHED_C_EXPORT gpusched_status gpusched_jobs_add(gpusched_jobs* jobs, const gpusched_job_spec* spec,
                                                     gpusched_error* err);
GPUSCHED_C_EXPORT void gpusched_jobs_free(gpusched_jobs* jobs);
GPUSCHED_C_EXPORT size_t gpusched_jobs_count(const gpusched_jobs* jobs);
GPUSCHED_C_EXPORT const char* gpusched_jobs_name(const gpusched_jobs* jobs, size_t index);
/* The index of the job named `name`, or (size_t)-1. */
GPUSCHED_C_EXPORT size_t gpusched_jobs_find(const gpusched_jobs* jobs, const char* name);

/* ---- placement --------------------------------------------------------------------------- */

typedef enum gpusched_verdict {
  GPUSCHED_PLACED = 0,
  GPUSCHED_NOT_NOW = 1,     /* fits the cluster, not its free resources now */
  GPUSCHED_INFEASIBLE = 2,  /* fits no node even when the cluster is empty */
  GPUSCHED_INVALID = 3      /* the job contradicts itself */
} gpusched_verdict;

/* Flags of gpusched_place / gpusched_place_gang. */
#define GPUSCHED_PLACE_DRY_RUN 1u /* decide but leave the state unchanged (a what-if) */

typedef struct gpusched_result gpusched_result;

/* Placement policies of the caller's, by name on this state (docs/policies.md): a definition of C
 * callbacks (copied; its `user` pointer must stay valid while the state lives), or every definition
 * of a plugin (a shared library exporting GPUSCHED_PLUGIN_ENTRY; never unloaded). A name a built-in
 * or an earlier policy has is refused (GPUSCHED_ERROR_INVALID_INPUT), as is a bad definition; a
 * plugin that cannot be loaded is GPUSCHED_ERROR_IO. Nothing changes on an error. */
GPUSCHED_C_EXPORT gpusched_status gpusched_state_add_policy(gpusched_state* state, const gpusched_policy_def* policy,
                                                            gpusched_error* err);
GPUSCHED_C_EXPORT gpusched_status gpusched_state_load_plugin(gpusched_state* state, const char* path, gpusched_error* err);
/* A job order and/or victim order of the caller's, by name on this state (gpusched/c/policy.h:
 * gpusched_order_def, copied), for the "order" / "victim_order" of a cycle's or a session's options.
 * gpusched_state_load_plugin also registers a plugin's orders (GPUSCHED_PLUGIN_ORDERS_ENTRY). Refused
 * like a policy (a taken name, a bad definition); an order whose callback fails makes the cycle
 * GPUSCHED_ERROR_POLICY, changing nothing. Since version 8. */
GPUSCHED_C_EXPORT gpusched_status gpusched_state_add_order(gpusched_state* state, const gpusched_order_def* order,
                                                           gpusched_error* err);

/* Places job `index` of `jobs` on `state` with the placement policy `policy` ("best-fit", "first-fit",
 * "worst-fit", "most-allocated", "least-allocated", "dot-product", "random", the FGD paper's "BestFit",
 * "FGD", "FGD-OC", ... packing for every task of `jobs`, or one added to the state; NULL = "best-fit"),
 * all replicas or none. A policy of the caller's that fails is GPUSCHED_ERROR_POLICY. When placed (and not GPUSCHED_PLACE_DRY_RUN) the state keeps the assignment, so
 * the next call sees it. A job that cannot be placed is not an error: the result says why. `seed`
 * feeds the "random" policy. */
GPUSCHED_C_EXPORT gpusched_status gpusched_place(gpusched_state* state, const gpusched_jobs* jobs, size_t index,
                                                  const char* policy, uint64_t seed, unsigned flags,
                                                  gpusched_result** out, gpusched_error* err);

/* The same through the gang solver (docs/gang.md): minimum members, topology levels, spread and
 * anti-affinity from the job document, an exact search with bounds when the greedy pass fails. */
GPUSCHED_C_EXPORT gpusched_status gpusched_place_gang(gpusched_state* state, const gpusched_jobs* jobs, size_t index,
                                                       const char* policy, uint64_t seed, unsigned flags,
                                                       gpusched_result** out, gpusched_error* err);

/* One placed task. Pointers belong to the result. */
typedef struct gpusched_task {
  const char* group;
  int32_t replica;
  size_t node;            /* index in the cluster (gpusched_state_node_name) */
  const char* node_name;
  size_t gpu_count;
  const uint32_t* gpus;   /* the GPU indices on the node (a MIG task: the MIG GPU) */
  int32_t gpu_milli;      /* share of each GPU, 1000 = whole */
  int32_t mig_start;      /* a MIG task: the instance's first slice; else -1 */
} gpusched_task;

GPUSCHED_C_EXPORT gpusched_verdict gpusched_result_verdict(const gpusched_result* result);
GPUSCHED_C_EXPORT size_t gpusched_result_task_count(const gpusched_result* result);
GPUSCHED_C_EXPORT gpusched_status gpusched_result_task(const gpusched_result* result, size_t index, gpusched_task* out,
                                                        gpusched_error* err);
/* "placed: 4 tasks", or why not: "group worker replica 0: 0/3 nodes: 3 insufficient GPUs". */
GPUSCHED_C_EXPORT const char* gpusched_result_message(const gpusched_result* result);
/* The result as one JSON object, the entry `gpusched place --format json` prints for the job
 * (placed: tasks; else verdict, message, reasons with numbers). Written on the first call; NULL only
 * when memory runs out. */
GPUSCHED_C_EXPORT const char* gpusched_result_json(const gpusched_result* result);
GPUSCHED_C_EXPORT void gpusched_result_free(gpusched_result* result);

/* Since API version 4. The job `result` placed finished (or was stopped): gives its tasks back to `state`, the state it
 * was placed on without GPUSCHED_PLACE_DRY_RUN. All tasks or none. Once: a second call, a dry run,
 * a job that was not placed or another state is GPUSCHED_ERROR_STATE, changing nothing. The result
 * stays readable (its tasks are where the job ran); free it as before. */
GPUSCHED_C_EXPORT gpusched_status gpusched_release(gpusched_state* state, gpusched_result* result,
                                                    gpusched_error* err);

/* ---- fair share -------------------------------------------------------------------------- */

typedef struct gpusched_order gpusched_order;

/* The admission order of `jobs` under hierarchical DRF, quotas and priorities (docs/fairness.md)
 * with the queues document `queues_json`, on the resources of `state`. `now`: the time aging measures
 * waits to, or NULL for the document's "now" (else the latest submit_time). */
GPUSCHED_C_EXPORT gpusched_status gpusched_fairshare(const gpusched_state* state, const char* queues_json,
                                                      const gpusched_jobs* jobs, const int64_t* now,
                                                      gpusched_order** out, gpusched_error* err);
/* Admitted jobs in order: the job's index in `jobs` and its queue. */
GPUSCHED_C_EXPORT size_t gpusched_order_admitted_count(const gpusched_order* order);
GPUSCHED_C_EXPORT size_t gpusched_order_admitted_job(const gpusched_order* order, size_t k);
GPUSCHED_C_EXPORT const char* gpusched_order_admitted_queue(const gpusched_order* order, size_t k);
/* Jobs left pending, each with its reason ("queue q: exceeds nominal quota ..."). */
GPUSCHED_C_EXPORT size_t gpusched_order_pending_count(const gpusched_order* order);
GPUSCHED_C_EXPORT size_t gpusched_order_pending_job(const gpusched_order* order, size_t k);
GPUSCHED_C_EXPORT const char* gpusched_order_pending_reason(const gpusched_order* order, size_t k);
/* The `gpusched fairshare --format json` document (admitted, pending, queues with shares). */
GPUSCHED_C_EXPORT const char* gpusched_order_json(const gpusched_order* order);
GPUSCHED_C_EXPORT void gpusched_order_free(gpusched_order* order);

/* ---- the scheduling cycle (C API version 2) -------------------------------------------- */

typedef struct gpusched_cycle_result gpusched_cycle_result;

/* Flags of gpusched_cycle and gpusched_session_cycle. */
#define GPUSCHED_CYCLE_DRY_RUN 1u /* decide, then leave the state exactly as it was */
/* (version 5) The decisions only: jobs that merely wait (not now) have no waiting record and no
 * reasons are worked out for them; infeasible and invalid jobs are still listed. */
#define GPUSCHED_CYCLE_DECISIONS_ONLY 2u
/* (version 9) What to do now only: as GPUSCHED_CYCLE_DECISIONS_ONLY, and no reservations are
 * reported, so conservative backfill plans the waiting jobs only as far as the last one that could
 * start now (the same starts, at a fraction of the cost in a contended queue). */
#define GPUSCHED_CYCLE_ACTIONS_ONLY 4u

/* One scheduling cycle at time `now` (docs/cycle.md): admission in fair-share order that places,
 * preemption, backfill reservations, elastic grow; the same cycle as `gpusched cycle`.
 *  - `state`: the cluster WITHOUT the running jobs' usage (their tasks are reserved on it from
 *    `running_json`);
 *  - `jobs`: the pending jobs (their cycle fields: runtime_estimate, not_before, preemptible, ...);
 *  - `queues_json`: the queues document of docs/fairness.md, or NULL / "" for none (every job in one
 *    queue, by priority then submit time);
 *  - `running_json`: the running jobs (the jobs format plus start_time and placement), or NULL / "";
 *  - `options_json`: NULL / "" for the defaults, or {"preempt": true, "within_queue": "lower",
 *    "reclaim_within_cohort": "any", "fair_share_reclaim": true, "grow": true, "min_runtime": 0,
 *    "backfill": "easy", "backfill_window": 86400, "backfill_resolution": 60, "backfill_depth": 500,
 *    "dry_run": false, "policy": "best-fit", "seed": 42, "order": "", "victim_order": ""} ("policy": the
 *    placement policy of every task, a name gpusched_place takes; since version 7. "order": the order
 *    within each queue, "priority" (the default), "shortest-first", "smallest-first", "submit-order" or one added to the state;
 *    "victim_order": which running jobs a preemption evicts first, "checkpoint-cost", "fewest-gpus",
 *    "newest-first" or one added; "" for the defaults; since version 8).
 * Without GPUSCHED_CYCLE_DRY_RUN (and "dry_run") the state keeps the running jobs' tasks and the
 * decisions: evicted tasks released, started and grown tasks reserved. With it (a what-if) the
 * state is unchanged. A job that waits is not an error: the result says why. On an error the state
 * is unchanged too. */
GPUSCHED_C_EXPORT gpusched_status gpusched_cycle(gpusched_state* state, const gpusched_jobs* jobs, const char* queues_json,
                                                  const char* running_json, int64_t now, const char* options_json,
                                                  unsigned flags, gpusched_cycle_result** out, gpusched_error* err);

/* Jobs that start this cycle, in the order started: the name, its index in `jobs`, and its tasks
 * (gpusched_task as gpusched_result_task gives them; mig_start -1 unless a MIG task). */
GPUSCHED_C_EXPORT size_t gpusched_cycle_start_count(const gpusched_cycle_result* result);
GPUSCHED_C_EXPORT const char* gpusched_cycle_start_job(const gpusched_cycle_result* result, size_t k);
GPUSCHED_C_EXPORT size_t gpusched_cycle_start_index(const gpusched_cycle_result* result, size_t k);
GPUSCHED_C_EXPORT size_t gpusched_cycle_start_task_count(const gpusched_cycle_result* result, size_t k);
GPUSCHED_C_EXPORT gpusched_status gpusched_cycle_start_task(const gpusched_cycle_result* result, size_t k, size_t index,
                                                             gpusched_task* out, gpusched_error* err);

/* Running jobs evicted (whole, or shrunk when elastic): the job, the job it makes room for ("" for
 * none), the reason ("priority", "cohort reclaim", "fair-share reclaim"), whether it is evicted whole
 * (1) or shrunk (0), and the GPU-seconds it loses since its last checkpoint. */
GPUSCHED_C_EXPORT size_t gpusched_cycle_eviction_count(const gpusched_cycle_result* result);
GPUSCHED_C_EXPORT const char* gpusched_cycle_eviction_job(const gpusched_cycle_result* result, size_t k);
GPUSCHED_C_EXPORT const char* gpusched_cycle_eviction_for(const gpusched_cycle_result* result, size_t k);
GPUSCHED_C_EXPORT const char* gpusched_cycle_eviction_reason(const gpusched_cycle_result* result, size_t k);
GPUSCHED_C_EXPORT int gpusched_cycle_eviction_whole(const gpusched_cycle_result* result, size_t k);
GPUSCHED_C_EXPORT double gpusched_cycle_eviction_lost_gpu_seconds(const gpusched_cycle_result* result, size_t k);

/* Pending jobs that wait, each with its verdict (GPUSCHED_NOT_NOW, GPUSCHED_INFEASIBLE,
 * GPUSCHED_INVALID) and why: "not now: cohort exhausted (need 32000, have 5000 milli-GPU), ...". */
GPUSCHED_C_EXPORT size_t gpusched_cycle_waiting_count(const gpusched_cycle_result* result);
GPUSCHED_C_EXPORT const char* gpusched_cycle_waiting_job(const gpusched_cycle_result* result, size_t k);
GPUSCHED_C_EXPORT size_t gpusched_cycle_waiting_index(const gpusched_cycle_result* result, size_t k);
GPUSCHED_C_EXPORT gpusched_verdict gpusched_cycle_waiting_verdict(const gpusched_cycle_result* result, size_t k);
GPUSCHED_C_EXPORT const char* gpusched_cycle_waiting_message(const gpusched_cycle_result* result, size_t k);

/* Every decision as the `gpusched cycle --format json` document (docs/cycle.md, "Output"): starts,
 * evictions, shrinks, grows, reservations, nominations, pending with structured reasons. */
GPUSCHED_C_EXPORT const char* gpusched_cycle_json(const gpusched_cycle_result* result);
GPUSCHED_C_EXPORT void gpusched_cycle_result_free(gpusched_cycle_result* result);

/* ---- Slurm state in (C API version 6; docs/slurm.md) ------------------------------------- */

/* Flag of the Slurm calls: held jobs are planned as if released (else they are skipped, as Slurm
 * does not start them). */
#define GPUSCHED_SLURM_PLAN_HELD 4u

/* The cluster of `sinfo_json` (the output of `sinfo --json` or `scontrol show nodes --json`) less
 * what the running jobs of `squeue_json` (`squeue --json`, or NULL / "" for none) hold, and its
 * pending jobs in Slurm's order (named by Slurm's id: "17", "5_2" for an array task), ready for
 * gpusched_place / gpusched_place_gang. Either output may be NULL when not wanted; both are set to
 * NULL first and on any error. Schemas v0.0.37-v0.0.41; errors name the document ("sinfo",
 * "squeue"), the record and the field. */
GPUSCHED_C_EXPORT gpusched_status gpusched_state_from_slurm(const char* sinfo_json, const char* squeue_json, unsigned flags,
                                                             gpusched_state** state_out, gpusched_jobs** jobs_out,
                                                             gpusched_error* err);

/* One scheduling cycle at `now` on Slurm's JSON, as `gpusched cycle --slurm`: the running jobs
 * reserved on the GPUs Slurm gave them with their end times, the pending jobs with their time
 * limits, one queue in priority order; `options_json` as gpusched_cycle's (e.g.
 * {"backfill": "conservative", "preempt": false}). The result's job indices refer to the pending
 * jobs in Slurm's order (gpusched_state_from_slurm's jobs). */
GPUSCHED_C_EXPORT gpusched_status gpusched_cycle_slurm(const char* sinfo_json, const char* squeue_json, int64_t now,
                                                        const char* options_json, unsigned flags, gpusched_cycle_result** out,
                                                        gpusched_error* err);

/* ---- the scheduler session (C API version 5) -------------------------------------------- */

/* A scheduler kept across cycles (docs/cycle.md, "Sessions"): the pending jobs compiled once and
 * kept in their queues' order, the running jobs and their queues' usage, told what changes between
 * cycles. An orchestrator's loop: submit what arrives, finish what ends, cycle every second; each
 * cycle costs what changed, not the length of the queue, and decides exactly what gpusched_cycle
 * decides on the same lists. gpusched_cycle itself is a fresh session for one cycle.
 *
 *   gpusched_session* s = NULL;
 *   gpusched_session_open(state, queues_json, NULL, &s, &err);
 *   gpusched_session_submit(s, jobs, &err);                       // pending jobs join their queues
 *   gpusched_session_cycle(s, now, 0, &result, &err);             // starts reserved on the state
 *   gpusched_session_finish(s, "train-7", &err);                  // its tasks given back
 *   gpusched_session_free(s);
 *
 * The session borrows `state`: the state must outlive it, and cluster events (cordon, failure, ...)
 * go to the state directly. Job names are unique within a session: a name already pending or running
 * is refused (GPUSCHED_ERROR_INVALID_INPUT naming it), and so is an unknown one. */
typedef struct gpusched_session gpusched_session;

/* Opens a session on `state` with the queues (NULL / "": none) and the cycle options (as
 * gpusched_cycle's `options_json`; "dry_run" there is ignored: each cycle says). */
GPUSCHED_C_EXPORT gpusched_status gpusched_session_open(gpusched_state* state, const char* queues_json,
                                                         const char* options_json, gpusched_session** out,
                                                         gpusched_error* err);
/* Every job of `jobs` joins its queue (all or none). */
GPUSCHED_C_EXPORT gpusched_status gpusched_session_submit(gpusched_session* session, const gpusched_jobs* jobs,
                                                           gpusched_error* err);
/* Jobs that run already (gpusched_cycle's running document); their tasks are reserved on the state. */
GPUSCHED_C_EXPORT gpusched_status gpusched_session_add_running(gpusched_session* session, const char* running_json,
                                                                gpusched_error* err);
/* A running job ended: its tasks are given back to the state. */
GPUSCHED_C_EXPORT gpusched_status gpusched_session_finish(gpusched_session* session, const char* job, gpusched_error* err);
/* A pending job withdrawn, or a running job stopped (its tasks given back). */
GPUSCHED_C_EXPORT gpusched_status gpusched_session_cancel(gpusched_session* session, const char* job, gpusched_error* err);
/* One cycle at `now`. Without GPUSCHED_CYCLE_DRY_RUN it is committed: the state keeps the decisions
 * and the session moves started jobs to running and evicted ones back to pending. With it nothing
 * changes. GPUSCHED_CYCLE_DECISIONS_ONLY, GPUSCHED_CYCLE_ACTIONS_ONLY: see above. Indices in the result refer to the session's
 * pending jobs in the order submitted (evicted jobs join the end). */
GPUSCHED_C_EXPORT gpusched_status gpusched_session_cycle(gpusched_session* session, int64_t now, unsigned flags,
                                                          gpusched_cycle_result** out, gpusched_error* err);
GPUSCHED_C_EXPORT size_t gpusched_session_pending_count(const gpusched_session* session);
GPUSCHED_C_EXPORT size_t gpusched_session_running_count(const gpusched_session* session);
GPUSCHED_C_EXPORT void gpusched_session_free(gpusched_session* session);

#ifdef __cplusplus
}
#endif

#endif /* GPUSCHED_C_GPUSCHED_H */
