/* The C API from C (C99): every call, hand-worked decisions, every error path, and every handle made
 * is freed (CI runs it under AddressSanitizer with detect_leaks=1, so a leak fails it).
 *
 *   gpusched_capi_test FIXTURES_DIR       (tests/fixtures: fairness/ is read from it)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpusched/c/gpusched.h"

static int failures = 0;
static int checks = 0;
#define CHECK(cond)                                                    \
  do {                                                                 \
    ++checks;                                                          \
    if (!(cond)) {                                                     \
      ++failures;                                                      \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                  \
  } while (0)
#define CHECK_STR(a, b) CHECK((a) != NULL && strcmp((a), (b)) == 0)
#define CHECK_HAS(text, part) CHECK((text) != NULL && strstr((text), (part)) != NULL)

static const int64_t kGiB = 1024LL * 1024 * 1024;

/* n0: 16 cores, 4 x A100-80GB; n1: 32 cores, 8 x A100-80GB; n2: 8 cores, no GPU. */
static gpusched_state* three_nodes(void) {
  gpusched_node nodes[3] = {{"n0", 16000, 64 * kGiB, "A100-80GB", 4},
                            {"n1", 32000, 128 * kGiB, "a100", 8}, /* an alias of the registry */
                            {"n2", 8000, 32 * kGiB, NULL, 0}};
  gpusched_state* s = NULL;
  gpusched_error err;
  CHECK(gpusched_state_from_nodes(nodes, 3, &s, &err) == GPUSCHED_OK);
  CHECK(err.code == GPUSCHED_OK && err.message[0] == '\0');
  return s;
}

static void add(gpusched_jobs* jobs, const char* name, int32_t replicas, int64_t cpu_milli, int32_t gpus,
                int32_t gpu_milli) {
  gpusched_job_spec spec;
  gpusched_error err;
  memset(&spec, 0, sizeof spec);
  spec.name = name;
  spec.replicas = replicas;
  spec.cpu_milli = cpu_milli;
  spec.memory_bytes = 4 * kGiB;
  spec.gpus = gpus;
  spec.gpu_milli = gpu_milli;
  CHECK(gpusched_jobs_add(jobs, &spec, &err) == GPUSCHED_OK);
}

static void test_version(void) {
  CHECK_STR(gpusched_version(), "0.1.0");
  CHECK(gpusched_c_api_version() == GPUSCHED_C_API_VERSION);
  CHECK_STR(gpusched_status_name(GPUSCHED_ERROR_PARSE), "parse");
  CHECK_STR(gpusched_status_name(GPUSCHED_OK), "ok");
}

/* Best-fit by hand (README: fewest idle GPUs left on the node; CPU-only tasks on the node with the
 * fewest GPUs; ties to the lowest index):
 *   a: 3 GPUs  -> n0 (leaves 1 idle; n1 would leave 5), GPUs 0,1,2
 *   b: 4 GPUs  -> n0 has 1 idle, so n1, GPUs 0..3 (n1: 4 idle left)
 *   c: 8 GPUs  -> no node has 8 idle now, n1 has 8 GPUs: not now
 *   d: 16 GPUs -> no node has 16 GPUs: infeasible
 *   e: 0 GPUs, 2 cores -> n2 (no GPUs)
 *   f: 4 GPUs dry run -> n1, GPUs 4..7, and the state keeps 4 idle GPUs on n1. */
static void test_place(void) {
  gpusched_state* s = three_nodes();
  gpusched_jobs* jobs = NULL;
  gpusched_result* r = NULL;
  gpusched_task task;
  gpusched_error err;
  CHECK(gpusched_jobs_new(&jobs, &err) == GPUSCHED_OK);
  add(jobs, "a", 1, 4000, 3, 0);
  add(jobs, "b", 1, 4000, 4, 0);
  add(jobs, "c", 1, 4000, 8, 0);
  add(jobs, "d", 1, 4000, 16, 0);
  add(jobs, "e", 1, 2000, 0, 0);
  add(jobs, "f", 1, 2000, 4, 1000);
  CHECK(gpusched_jobs_count(jobs) == 6);
  CHECK_STR(gpusched_jobs_name(jobs, 5), "f");
  CHECK(gpusched_jobs_find(jobs, "d") == 3);
  CHECK(gpusched_jobs_find(jobs, "zz") == (size_t)-1);
  CHECK(gpusched_state_node_count(s) == 3);
  CHECK_STR(gpusched_state_node_name(s, 1), "n1");
  CHECK(gpusched_state_node_name(s, 3) == NULL);
  CHECK(gpusched_state_gpu_count(s, 1) == 8);

  CHECK(gpusched_place(s, jobs, 0, "best-fit", 0, 0, &r, &err) == GPUSCHED_OK);
  CHECK(gpusched_result_verdict(r) == GPUSCHED_PLACED);
  CHECK(gpusched_result_task_count(r) == 1);
  CHECK(gpusched_result_task(r, 0, &task, &err) == GPUSCHED_OK);
  CHECK(task.node == 0);
  CHECK_STR(task.node_name, "n0");
  CHECK_STR(task.group, "main");
  CHECK(task.gpu_count == 3 && task.gpus[0] == 0 && task.gpus[1] == 1 && task.gpus[2] == 2);
  CHECK(task.gpu_milli == 1000 && task.mig_start == -1);
  CHECK(gpusched_result_task(r, 1, &task, &err) == GPUSCHED_ERROR_INVALID_ARGUMENT);
  CHECK_HAS(err.message, "out of range");
  CHECK_HAS(gpusched_result_json(r), "\"node\":\"n0\"");
  gpusched_result_free(r);
  CHECK(gpusched_state_idle_gpus(s, 0) == 1);
  CHECK(gpusched_state_free_cpu_milli(s, 0) == 12000);

  CHECK(gpusched_place(s, jobs, 1, NULL, 0, 0, &r, &err) == GPUSCHED_OK); /* NULL policy: best-fit */
  CHECK(gpusched_result_verdict(r) == GPUSCHED_PLACED);
  CHECK(gpusched_result_task(r, 0, &task, &err) == GPUSCHED_OK);
  CHECK(task.node == 1 && task.gpu_count == 4 && task.gpus[0] == 0 && task.gpus[3] == 3);
  gpusched_result_free(r);
  CHECK(gpusched_state_idle_gpus(s, 1) == 4);
  CHECK(gpusched_state_free_gpu_milli(s, 1) == 4000);

  CHECK(gpusched_place(s, jobs, 2, "best-fit", 0, 0, &r, &err) == GPUSCHED_OK);
  CHECK(gpusched_result_verdict(r) == GPUSCHED_NOT_NOW);
  CHECK(gpusched_result_task_count(r) == 0);
  CHECK_HAS(gpusched_result_message(r), "insufficient GPUs");
  CHECK_HAS(gpusched_result_json(r), "\"verdict\":\"not now\"");
  gpusched_result_free(r);

  CHECK(gpusched_place(s, jobs, 3, "first-fit", 0, 0, &r, &err) == GPUSCHED_OK);
  CHECK(gpusched_result_verdict(r) == GPUSCHED_INFEASIBLE);
  gpusched_result_free(r);

  CHECK(gpusched_place(s, jobs, 4, "best-fit", 0, 0, &r, &err) == GPUSCHED_OK);
  CHECK(gpusched_result_task(r, 0, &task, &err) == GPUSCHED_OK);
  CHECK(task.node == 2 && task.gpu_count == 0 && task.gpus == NULL);
  gpusched_result_free(r);

  CHECK(gpusched_place(s, jobs, 5, "best-fit", 0, GPUSCHED_PLACE_DRY_RUN, &r, &err) == GPUSCHED_OK);
  CHECK(gpusched_result_verdict(r) == GPUSCHED_PLACED);
  CHECK(gpusched_result_task(r, 0, &task, &err) == GPUSCHED_OK);
  CHECK(task.node == 1 && task.gpus[0] == 4 && task.gpus[3] == 7);
  gpusched_result_free(r);
  CHECK(gpusched_state_idle_gpus(s, 1) == 4); /* the dry run left the state as it was */

  /* Errors: an unknown policy, an index out of range, NULL pointers; *out stays NULL. */
  r = (gpusched_result*)&err; /* garbage the call must overwrite */
  CHECK(gpusched_place(s, jobs, 0, "no-such-policy", 0, 0, &r, &err) == GPUSCHED_ERROR_UNKNOWN_NAME);
  CHECK(r == NULL);
  CHECK(err.code == GPUSCHED_ERROR_UNKNOWN_NAME);
  CHECK_HAS(err.message, "policy: unknown policy \"no-such-policy\" (known: first-fit, best-fit");
  CHECK(gpusched_place(s, jobs, 6, "best-fit", 0, 0, &r, &err) == GPUSCHED_ERROR_INVALID_ARGUMENT);
  CHECK_HAS(err.message, "index: 6 is out of range (6 jobs)");
  r = (gpusched_result*)&err; /* a stale pointer: every failing call sets *out to NULL */
  CHECK(gpusched_place(NULL, jobs, 0, "best-fit", 0, 0, &r, &err) == GPUSCHED_ERROR_INVALID_ARGUMENT);
  CHECK_STR(err.message, "state: NULL");
  CHECK(r == NULL);
  r = (gpusched_result*)&err;
  CHECK(gpusched_place_gang(NULL, jobs, 0, "best-fit", 0, 0, &r, &err) == GPUSCHED_ERROR_INVALID_ARGUMENT);
  CHECK(r == NULL);
  r = (gpusched_result*)&err;
  CHECK(gpusched_place_gang(s, NULL, 0, "best-fit", 0, 0, &r, &err) == GPUSCHED_ERROR_INVALID_ARGUMENT);
  CHECK(r == NULL);
  CHECK(gpusched_place(s, jobs, 0, "best-fit", 0, 0, NULL, NULL) == GPUSCHED_ERROR_INVALID_ARGUMENT);
  /* NULL handles are safe in accessors and frees. */
  CHECK(gpusched_result_verdict(NULL) == GPUSCHED_INVALID);
  CHECK(gpusched_result_message(NULL) == NULL);
  CHECK(gpusched_jobs_count(NULL) == 0);
  gpusched_result_free(NULL);
  gpusched_jobs_free(NULL);
  gpusched_state_free(NULL);
  gpusched_order_free(NULL);

  /* The state keeps each job compiled between calls, per jobs handle: another handle's job 0 (16
   * GPUs here, infeasible) is its own, also when it is made after the first handle is freed (so
   * that it may get the same address). */
  gpusched_jobs_free(jobs);
  for (int round = 0; round < 2; ++round) {
    CHECK(gpusched_jobs_new(&jobs, &err) == GPUSCHED_OK);
    add(jobs, round == 0 ? "big" : "small", 1, 1000, round == 0 ? 16 : 1, 0);
    CHECK(gpusched_place(s, jobs, 0, "best-fit", 0, GPUSCHED_PLACE_DRY_RUN, &r, &err) == GPUSCHED_OK);
    CHECK(gpusched_result_verdict(r) == (round == 0 ? GPUSCHED_INFEASIBLE : GPUSCHED_PLACED));
    gpusched_result_free(r);
    gpusched_jobs_free(jobs);
  }
  gpusched_state_free(s);
}

static void test_job_spec_errors(void) {
  gpusched_jobs* jobs = NULL;
  gpusched_job_spec spec;
  gpusched_error err;
  CHECK(gpusched_jobs_new(&jobs, &err) == GPUSCHED_OK);
  memset(&spec, 0, sizeof spec);
  spec.name = "x";
  spec.replicas = 0;
  CHECK(gpusched_jobs_add(jobs, &spec, &err) == GPUSCHED_ERROR_INVALID_INPUT);
  CHECK_STR(err.message, "jobs[0].replicas: expected at least 1, got 0");
  spec.replicas = 1;
  spec.gpus = 2;
  spec.gpu_milli = 500;
  CHECK(gpusched_jobs_add(jobs, &spec, &err) == GPUSCHED_ERROR_INVALID_INPUT);
  CHECK_STR(err.message, "jobs[0].gpus: expected 1 with a GPU share of 500 milli-GPU, got 2");
  spec.gpus = 1;
  CHECK(gpusched_jobs_add(jobs, &spec, &err) == GPUSCHED_OK);
  CHECK(gpusched_jobs_add(jobs, &spec, &err) == GPUSCHED_ERROR_INVALID_INPUT);
  CHECK_STR(err.message, "jobs[1].name: duplicate job name \"x\"");
  /* A newline forges a row of every answer; bytes that are not UTF-8 came back as U+FFFD. */
  spec.name = "a\nb";
  CHECK(gpusched_jobs_add(jobs, &spec, &err) == GPUSCHED_ERROR_INVALID_INPUT);
  CHECK_STR(err.message, "jobs[1].name: control character 0x0a in \"a\\x0ab\"");
  spec.name = "j\xff";
  CHECK(gpusched_jobs_add(jobs, &spec, &err) == GPUSCHED_ERROR_INVALID_INPUT);
  CHECK_STR(err.message, "jobs[1].name: not UTF-8: \"j\\xff\"");
  spec.name = "y";
  spec.queue = "q\x01";
  CHECK(gpusched_jobs_add(jobs, &spec, &err) == GPUSCHED_ERROR_INVALID_INPUT);
  CHECK_STR(err.message, "jobs[1].queue: control character 0x01 in \"q\\x01\"");
  CHECK(gpusched_jobs_count(jobs) == 1);
  gpusched_jobs_free(jobs);
}

static void test_state_errors(void) {
  gpusched_state* s = NULL;
  gpusched_jobs* jobs = NULL;
  gpusched_error err;
  char long_path[1500];
  gpusched_node bad_model[1] = {{"m0", 8000, kGiB, "Z100", 2}};
  gpusched_node bad_cpu[1] = {{"m0", -1, kGiB, NULL, 0}};
  gpusched_node dup[2] = {{"m0", 1000, kGiB, NULL, 0}, {"m0", 1000, kGiB, NULL, 0}};

  CHECK(gpusched_state_from_json("{\"nodes\": [", &s, &err) == GPUSCHED_ERROR_PARSE);
  CHECK(s == NULL);
  CHECK(gpusched_state_from_json("{\"nodes\": [{\"name\": \"a\", \"cpu\": 8, \"memory\": \"8Gi\", \"gpus\": -2}]}", &s,
                                 &err) == GPUSCHED_ERROR_INVALID_INPUT);
  CHECK_HAS(err.message, "nodes[0].gpus");
  CHECK_HAS(err.message, "-2");
  CHECK(gpusched_state_from_nodes(bad_model, 1, &s, &err) == GPUSCHED_ERROR_UNKNOWN_NAME);
  CHECK_STR(err.message, "nodes[0].gpu_model: unknown GPU model \"Z100\"");
  CHECK(gpusched_state_from_nodes(bad_cpu, 1, &s, &err) == GPUSCHED_ERROR_INVALID_INPUT);
  CHECK_STR(err.message, "nodes[0].cpu_milli: expected a non-negative integer, got -1");
  CHECK(gpusched_state_from_nodes(dup, 2, &s, &err) == GPUSCHED_ERROR_INVALID_INPUT);
  CHECK_STR(err.message, "nodes[1].name: duplicate node name \"m0\"");
  CHECK(gpusched_state_from_nodes(NULL, 1, &s, &err) == GPUSCHED_ERROR_INVALID_ARGUMENT);
  /* count = SIZE_MAX was an internal error ("vector::reserve"). */
  CHECK(gpusched_state_from_nodes(dup, (size_t)-1, &s, &err) == GPUSCHED_ERROR_LIMIT);
  CHECK(s == NULL);
  /* A directory is an I/O error, not a parse error. */
  CHECK(gpusched_state_from_file("/tmp", &s, &err) == GPUSCHED_ERROR_IO);
  CHECK_STR(err.message, "/tmp: is a directory, expected a file");
  CHECK(gpusched_state_from_json(NULL, &s, &err) == GPUSCHED_ERROR_INVALID_ARGUMENT);
  CHECK(gpusched_state_from_json("{}", NULL, NULL) == GPUSCHED_ERROR_INVALID_ARGUMENT);
  CHECK(gpusched_state_from_file("/nonexistent/cluster.json", &s, &err) == GPUSCHED_ERROR_IO);
  CHECK_STR(err.message, "/nonexistent/cluster.json: cannot open file");
  CHECK(gpusched_jobs_from_json("{\"jobs\": [{\"name\": \"j\", \"gpus\": 1, \"colour\": 1}]}", &jobs, &err) ==
        GPUSCHED_ERROR_INVALID_INPUT);
  CHECK(jobs == NULL);
  CHECK_HAS(err.message, "colour");
  /* A message longer than the buffer is cut and ends with "...". */
  memset(long_path, 'x', sizeof long_path - 1);
  long_path[0] = '/';
  long_path[sizeof long_path - 1] = '\0';
  CHECK(gpusched_state_from_file(long_path, &s, &err) == GPUSCHED_ERROR_IO);
  CHECK(strlen(err.message) == GPUSCHED_ERROR_MESSAGE_SIZE - 1);
  CHECK(strcmp(err.message + GPUSCHED_ERROR_MESSAGE_SIZE - 4, "...") == 0);
  /* An empty cluster is a valid cluster. */
  CHECK(gpusched_state_from_nodes(NULL, 0, &s, &err) == GPUSCHED_OK);
  CHECK(gpusched_state_node_count(s) == 0);
  gpusched_state_free(s);
}

/* Gangs by hand on the three nodes with n1 half used (4 idle):
 *   g-rigid: 2 x 8 GPUs, rigid -> only n1 has 8 GPUs at all: infeasible;
 *   g-elastic: 3 x 4 GPUs, min 1 -> n0 4 idle, n1 4 idle: 2 replicas placed (one per node). */
static void test_gang(void) {
  gpusched_state* s = three_nodes();
  gpusched_jobs* fill = NULL;
  gpusched_jobs* jobs = NULL;
  gpusched_result* r = NULL;
  gpusched_task task;
  gpusched_error err;
  CHECK(gpusched_jobs_new(&fill, &err) == GPUSCHED_OK);
  add(fill, "fill", 1, 1000, 4, 0);
  CHECK(gpusched_place(s, fill, 0, "worst-fit", 0, 0, &r, &err) == GPUSCHED_OK); /* most idle left: n1 */
  CHECK(gpusched_result_task(r, 0, &task, &err) == GPUSCHED_OK && task.node == 1);
  gpusched_result_free(r);
  CHECK(gpusched_jobs_from_json("{\"jobs\": ["
                                "{\"name\": \"g-rigid\", \"replicas\": 2, \"gpus\": 8, \"cpu\": 1, \"memory\": \"1Gi\"},"
                                "{\"name\": \"g-elastic\", \"replicas\": 3, \"min_replicas\": 1, \"gpus\": 4, \"cpu\": 1,"
                                " \"memory\": \"1Gi\"}]}",
                                &jobs, &err) == GPUSCHED_OK);
  CHECK(gpusched_place_gang(s, jobs, 0, "best-fit", 0, 0, &r, &err) == GPUSCHED_OK);
  CHECK(gpusched_result_verdict(r) == GPUSCHED_INFEASIBLE);
  CHECK(gpusched_result_message(r)[0] != '\0');
  gpusched_result_free(r);
  CHECK(gpusched_place_gang(s, jobs, 1, "best-fit", 0, 0, &r, &err) == GPUSCHED_OK);
  CHECK(gpusched_result_verdict(r) == GPUSCHED_PLACED);
  CHECK(gpusched_result_task_count(r) == 2);
  CHECK_HAS(gpusched_result_json(r), "\"placed\":{\"task\":2}");
  gpusched_result_free(r);
  CHECK(gpusched_state_idle_gpus(s, 0) == 0 && gpusched_state_idle_gpus(s, 1) == 0);
  gpusched_jobs_free(jobs);
  gpusched_jobs_free(fill);
  gpusched_state_free(s);
}

static char* read_all(const char* path) {
  FILE* f = fopen(path, "rb");
  char* text;
  long size;
  if (f == NULL) return NULL;
  fseek(f, 0, SEEK_END);
  size = ftell(f);
  fseek(f, 0, SEEK_SET);
  text = (char*)malloc((size_t)size + 1);
  if (text != NULL) {
    size_t got = fread(text, 1, (size_t)size, f);
    text[got] = '\0';
  }
  fclose(f);
  return text;
}

/* The fair-share order of tests/fixtures/fairness (worked by hand in tests/cli/fairness_cli_test.cpp):
 * v-train, n-pretrain, v-old, n-ft admitted; v-big (borrowing limit) and n-more pending. */
static void test_fairshare(const char* fixtures) {
  char path[4096];
  char* queues;
  gpusched_state* s = NULL;
  gpusched_jobs* jobs = NULL;
  gpusched_order* order = NULL;
  gpusched_error err;
  const char* admitted[4] = {"v-train", "n-pretrain", "v-old", "n-ft"};
  size_t k;
  int64_t now = 0;

  snprintf(path, sizeof path, "%s/fairness/cluster.json", fixtures);
  CHECK(gpusched_state_from_file(path, &s, &err) == GPUSCHED_OK);
  snprintf(path, sizeof path, "%s/fairness/jobs.json", fixtures);
  CHECK(gpusched_jobs_from_file(path, &jobs, &err) == GPUSCHED_OK);
  snprintf(path, sizeof path, "%s/fairness/queues.json", fixtures);
  queues = read_all(path);
  CHECK(queues != NULL);
  if (s == NULL || jobs == NULL || queues == NULL) {
    free(queues);
    gpusched_jobs_free(jobs);
    gpusched_state_free(s);
    return;
  }
  CHECK(gpusched_fairshare(s, queues, jobs, NULL, &order, &err) == GPUSCHED_OK);
  CHECK(gpusched_order_admitted_count(order) == 4);
  for (k = 0; k < 4 && k < gpusched_order_admitted_count(order); ++k)
    CHECK_STR(gpusched_jobs_name(jobs, gpusched_order_admitted_job(order, k)), admitted[k]);
  CHECK_STR(gpusched_order_admitted_queue(order, 1), "nlp");
  CHECK(gpusched_order_pending_count(order) == 2);
  CHECK_STR(gpusched_jobs_name(jobs, gpusched_order_pending_job(order, 0)), "v-big");
  CHECK_HAS(gpusched_order_pending_reason(order, 0), "exceeds the borrowing limit on gpu:A100-80GB (requested 4, available 2)");
  CHECK(gpusched_order_admitted_job(order, 9) == (size_t)-1);
  CHECK_HAS(gpusched_order_json(order), "\"dominant_share\"");
  gpusched_order_free(order);

  /* now = 0: no aging, v-old (priority 0) is no longer among the first two. */
  CHECK(gpusched_fairshare(s, queues, jobs, &now, &order, &err) == GPUSCHED_OK);
  CHECK(strcmp(gpusched_jobs_name(jobs, gpusched_order_admitted_job(order, 0)), "v-old") != 0);
  CHECK(strcmp(gpusched_jobs_name(jobs, gpusched_order_admitted_job(order, 1)), "v-old") != 0);
  gpusched_order_free(order);

  order = NULL;
  CHECK(gpusched_fairshare(s, "{\"queues\": [{\"name\": \"a\", \"weight\": -1}]}", jobs, NULL, &order, &err) ==
        GPUSCHED_ERROR_INVALID_INPUT);
  CHECK(order == NULL);
  CHECK_STR(err.message, "queues: queues[0].weight: expected a positive number, got -1");
  CHECK(gpusched_fairshare(s, "[", jobs, NULL, &order, &err) == GPUSCHED_ERROR_PARSE);

  free(queues);
  gpusched_jobs_free(jobs);
  gpusched_state_free(s);
}

/* One scheduling cycle by hand on three_nodes() at t=1000 (no queues: one queue, priority then
 * submit time; EASY backfill; preemption within the queue of lower priority):
 *   running: low (priority 0) holds all 8 GPUs of n1 since t=0, never checkpointed;
 *   high (priority 10, 8 GPUs): no node has 8 idle GPUs (n0 has 4); evicting low frees n1, so low
 *     is evicted for high (priority) and loses 8 GPUs x 1000 s = 8000 GPU-s; high starts on n1 0..7;
 *   small (2 GPUs): best fit on n0 (GPUs 0, 1);
 *   huge (16 GPUs): no node has 16 GPUs, infeasible.
 * A dry run leaves the state as it was; without it the state keeps high and small (low was
 * evicted). Bad running jobs, options and queues are errors naming the field, state unchanged. */
static const char* kRunning =
    "{\"jobs\": [{\"name\": \"low\", \"gpus\": 8, \"cpu\": 4, \"memory\": \"4Gi\", \"start_time\": 0,"
    " \"placement\": [{\"node\": \"n1\", \"gpus\": [0,1,2,3,4,5,6,7]}]}]}";
static const char* kPending =
    "{\"jobs\": [{\"name\": \"high\", \"gpus\": 8, \"cpu\": 4, \"memory\": \"4Gi\", \"priority\": 10, \"submit_time\": 500},"
    " {\"name\": \"small\", \"gpus\": 2, \"cpu\": 4, \"memory\": \"4Gi\", \"submit_time\": 600},"
    " {\"name\": \"huge\", \"gpus\": 16, \"cpu\": 4, \"memory\": \"4Gi\", \"submit_time\": 700}]}";

static void test_cycle(void) {
  gpusched_state* s = three_nodes();
  gpusched_jobs* jobs = NULL;
  gpusched_cycle_result* r = NULL;
  gpusched_task task;
  gpusched_error err;
  CHECK(gpusched_jobs_from_json(kPending, &jobs, &err) == GPUSCHED_OK);
  if (s == NULL || jobs == NULL) {
    gpusched_jobs_free(jobs);
    gpusched_state_free(s);
    return;
  }

  /* Dry run: the decisions, and the state unchanged. */
  CHECK(gpusched_cycle(s, jobs, NULL, kRunning, 1000, NULL, GPUSCHED_CYCLE_DRY_RUN, &r, &err) == GPUSCHED_OK);
  CHECK(err.code == GPUSCHED_OK);
  CHECK(gpusched_cycle_start_count(r) == 2);
  CHECK_STR(gpusched_cycle_start_job(r, 0), "high");
  CHECK(gpusched_cycle_start_index(r, 0) == 0);
  CHECK(gpusched_cycle_start_task_count(r, 0) == 1);
  CHECK(gpusched_cycle_start_task(r, 0, 0, &task, &err) == GPUSCHED_OK);
  CHECK_STR(task.node_name, "n1");
  CHECK(task.node == 1 && task.gpu_count == 8 && task.gpus[0] == 0 && task.gpus[7] == 7);
  CHECK_STR(task.group, "task");
  CHECK(task.replica == 0 && task.gpu_milli == 1000 && task.mig_start == -1);
  CHECK_STR(gpusched_cycle_start_job(r, 1), "small");
  CHECK(gpusched_cycle_start_task(r, 1, 0, &task, &err) == GPUSCHED_OK);
  CHECK_STR(task.node_name, "n0");
  CHECK(task.gpu_count == 2 && task.gpus[0] == 0 && task.gpus[1] == 1);
  CHECK(gpusched_cycle_eviction_count(r) == 1);
  CHECK_STR(gpusched_cycle_eviction_job(r, 0), "low");
  CHECK_STR(gpusched_cycle_eviction_for(r, 0), "high");
  CHECK_STR(gpusched_cycle_eviction_reason(r, 0), "priority");
  CHECK(gpusched_cycle_eviction_whole(r, 0) == 1);
  CHECK(gpusched_cycle_eviction_lost_gpu_seconds(r, 0) == 8000.0);
  CHECK(gpusched_cycle_waiting_count(r) == 1);
  CHECK_STR(gpusched_cycle_waiting_job(r, 0), "huge");
  CHECK(gpusched_cycle_waiting_index(r, 0) == 2);
  CHECK(gpusched_cycle_waiting_verdict(r, 0) == GPUSCHED_INFEASIBLE);
  CHECK_HAS(gpusched_cycle_waiting_message(r, 0), "insufficient GPUs (need 16, have 8 GPUs)");
  CHECK_HAS(gpusched_cycle_json(r), "\"evictions\":[{\"for\":\"high\"");
  CHECK_HAS(gpusched_cycle_json(r), "\"now\":1000");
  /* Out of range: NULL, 0, (size_t)-1 and an error for the task. */
  CHECK(gpusched_cycle_start_job(r, 2) == NULL);
  CHECK(gpusched_cycle_start_index(r, 2) == (size_t)-1);
  CHECK(gpusched_cycle_waiting_verdict(r, 5) == GPUSCHED_INVALID);
  CHECK(gpusched_cycle_start_task(r, 0, 1, &task, &err) == GPUSCHED_ERROR_INVALID_ARGUMENT);
  CHECK_STR(err.message, "index: 1 is out of range (1 tasks)");
  CHECK(gpusched_cycle_start_task(r, 3, 0, &task, &err) == GPUSCHED_ERROR_INVALID_ARGUMENT);
  gpusched_cycle_result_free(r);
  CHECK(gpusched_state_idle_gpus(s, 0) == 4 && gpusched_state_idle_gpus(s, 1) == 8);

  /* A time out of range is refused before anything is reserved: not even the generation moves. */
  {
    const uint64_t before = gpusched_state_generation(s);
    r = NULL;
    CHECK(gpusched_cycle(s, jobs, NULL, kRunning, INT64_MAX, NULL, 0, &r, &err) == GPUSCHED_ERROR_INVALID_INPUT);
    CHECK(r == NULL);
    CHECK_HAS(err.message, "now: expected seconds in");
    CHECK(gpusched_cycle(s, jobs, NULL, kRunning, -1, NULL, 0, &r, &err) != GPUSCHED_OK);
    CHECK(gpusched_state_generation(s) == before);
  }

  /* Without preemption high waits (not now) and low keeps n1. */
  r = NULL;
  CHECK(gpusched_cycle(s, jobs, "", kRunning, 1000, "{\"preempt\": false}", GPUSCHED_CYCLE_DRY_RUN, &r, &err) == GPUSCHED_OK);
  CHECK(gpusched_cycle_eviction_count(r) == 0);
  CHECK(gpusched_cycle_start_count(r) == 1);
  CHECK_STR(gpusched_cycle_start_job(r, 0), "small");
  CHECK_STR(gpusched_cycle_waiting_job(r, 0), "high");
  CHECK(gpusched_cycle_waiting_verdict(r, 0) == GPUSCHED_NOT_NOW);
  gpusched_cycle_result_free(r);

  /* Applied: the state keeps high on n1 and small on n0 (low was evicted). */
  r = NULL;
  CHECK(gpusched_cycle(s, jobs, NULL, kRunning, 1000, "", 0, &r, &err) == GPUSCHED_OK);
  CHECK(gpusched_cycle_start_count(r) == 2);
  gpusched_cycle_result_free(r);
  CHECK(gpusched_state_idle_gpus(s, 0) == 2 && gpusched_state_idle_gpus(s, 1) == 0);

  /* Errors: the field named, *out NULL, the state unchanged. */
  gpusched_state_free(s);
  s = three_nodes();
  r = NULL;
  CHECK(gpusched_cycle(s, jobs, NULL,
                       "{\"jobs\": [{\"name\": \"x\", \"gpus\": 1, \"start_time\": 0, \"placement\": [{\"node\": \"n0\", \"gpus\": [0]}]},"
                       " {\"name\": \"y\", \"gpus\": 1, \"start_time\": 0, \"placement\": [{\"node\": \"nope\", \"gpus\": [0]}]}]}",
                       1000, NULL, 0, &r, &err) == GPUSCHED_ERROR_UNKNOWN_NAME);
  CHECK(r == NULL);
  CHECK_STR(err.message, "running: jobs[1].placement[0].node: no node named \"nope\"");
  CHECK(gpusched_state_idle_gpus(s, 0) == 4);  /* x's reservation rolled back */
  CHECK(gpusched_cycle(s, jobs, NULL, "{\"jobs\": [{\"name\": \"x\", \"gpus\": 1}]}", 1000, NULL, 0, &r, &err) ==
        GPUSCHED_ERROR_INVALID_INPUT);
  CHECK_STR(err.message, "running: jobs[0].start_time: missing (a running job's start, seconds)");
  CHECK(gpusched_cycle(s, jobs, NULL, kRunning, 1000, "{\"backfill\": \"sometimes\"}", 0, &r, &err) ==
        GPUSCHED_ERROR_UNKNOWN_NAME);
  CHECK_STR(err.message, "options.backfill: expected one of none, easy, conservative, got \"sometimes\"");
  CHECK(gpusched_cycle(s, jobs, NULL, kRunning, 1000, "{\"colour\": 1}", 0, &r, &err) == GPUSCHED_ERROR_INVALID_INPUT);
  CHECK_HAS(err.message, "options.colour: unknown field");
  CHECK(gpusched_cycle(s, jobs, "[", kRunning, 1000, NULL, 0, &r, &err) == GPUSCHED_ERROR_PARSE);
  /* A plan with no running jobs changes nothing either. */
  CHECK(gpusched_cycle(s, jobs, NULL, NULL, 1000, NULL, GPUSCHED_CYCLE_DRY_RUN, &r, &err) == GPUSCHED_OK);
  CHECK(gpusched_cycle_start_count(r) >= 1);
  gpusched_cycle_result_free(r);
  r = NULL;
  CHECK(gpusched_state_idle_gpus(s, 0) == 4 && gpusched_state_idle_gpus(s, 1) == 8);
  CHECK(gpusched_cycle(NULL, jobs, NULL, NULL, 0, NULL, 0, &r, &err) == GPUSCHED_ERROR_INVALID_ARGUMENT);
  CHECK_STR(err.message, "state: NULL");
  CHECK(gpusched_cycle(s, jobs, NULL, NULL, 0, NULL, 0, NULL, &err) == GPUSCHED_ERROR_INVALID_ARGUMENT);
  CHECK(r == NULL);
  CHECK(gpusched_state_idle_gpus(s, 0) == 4 && gpusched_state_idle_gpus(s, 1) == 8);
  gpusched_cycle_result_free(NULL);

  gpusched_jobs_free(jobs);
  gpusched_state_free(s);
}

/* The session (API version 5), kept across cycles on three_nodes() without preemption. A plan with no
 * running jobs changes nothing (gpusched_cycle's dry run used to keep the starts then); committed,
 * small (2 GPUs) starts on n0 by best fit and huge (16 GPUs) waits, infeasible; high (8 GPUs)
 * arrives and starts on n1 at the next cycle (decisions only: huge is still listed); small finishes
 * and n0 has its 4 GPUs back. */
static void test_session(void) {
  gpusched_state* s = three_nodes();
  gpusched_jobs* jobs = NULL;
  gpusched_jobs* late = NULL;
  gpusched_session* ses = NULL;
  gpusched_cycle_result* r = NULL;
  gpusched_task task;
  gpusched_error err;
  CHECK(gpusched_jobs_from_json("{\"jobs\": [{\"name\": \"small\", \"gpus\": 2, \"cpu\": 4, \"submit_time\": 600},"
                                " {\"name\": \"huge\", \"gpus\": 16, \"cpu\": 4, \"submit_time\": 700}]}",
                                &jobs, &err) == GPUSCHED_OK);
  CHECK(gpusched_jobs_from_json("{\"jobs\": [{\"name\": \"high\", \"gpus\": 8, \"cpu\": 4, \"priority\": 10}]}", &late,
                                &err) == GPUSCHED_OK);
  CHECK(gpusched_session_open(s, NULL, "{\"preempt\": false}", &ses, &err) == GPUSCHED_OK);
  if (s == NULL || jobs == NULL || late == NULL || ses == NULL) {
    gpusched_session_free(ses);
    gpusched_jobs_free(jobs);
    gpusched_jobs_free(late);
    gpusched_state_free(s);
    return;
  }
  CHECK(gpusched_session_submit(ses, jobs, &err) == GPUSCHED_OK);
  CHECK(gpusched_session_pending_count(ses) == 2);
  /* The same jobs again: refused whole, naming the job. */
  CHECK(gpusched_session_submit(ses, jobs, &err) == GPUSCHED_ERROR_INVALID_INPUT);
  CHECK_STR(err.message, "jobs: jobs[0].name: \"small\" is already pending or running");
  CHECK(gpusched_session_pending_count(ses) == 2);
  /* A plan: the decisions, nothing changed (no running jobs at all). */
  CHECK(gpusched_session_cycle(ses, 1000, GPUSCHED_CYCLE_DRY_RUN, &r, &err) == GPUSCHED_OK);
  CHECK(gpusched_cycle_start_count(r) == 1);
  CHECK_STR(gpusched_cycle_start_job(r, 0), "small");
  gpusched_cycle_result_free(r);
  CHECK(gpusched_state_idle_gpus(s, 0) == 4 && gpusched_session_running_count(ses) == 0);
  /* Committed. */
  r = NULL;
  CHECK(gpusched_session_cycle(ses, 1000, 0, &r, &err) == GPUSCHED_OK);
  CHECK(gpusched_cycle_start_count(r) == 1);
  CHECK(gpusched_cycle_start_task(r, 0, 0, &task, &err) == GPUSCHED_OK);
  CHECK_STR(task.node_name, "n0");
  CHECK(gpusched_cycle_waiting_count(r) == 1);
  CHECK(gpusched_cycle_waiting_verdict(r, 0) == GPUSCHED_INFEASIBLE);
  gpusched_cycle_result_free(r);
  CHECK(gpusched_state_idle_gpus(s, 0) == 2);
  CHECK(gpusched_session_running_count(ses) == 1 && gpusched_session_pending_count(ses) == 1);
  /* Decisions only: the infeasible job is still listed; actions only (planned first) decides the same. */
  r = NULL;
  CHECK(gpusched_session_submit(ses, late, &err) == GPUSCHED_OK);
  CHECK(gpusched_session_cycle(ses, 1100, GPUSCHED_CYCLE_ACTIONS_ONLY | GPUSCHED_CYCLE_DRY_RUN, &r, &err) == GPUSCHED_OK);
  CHECK(gpusched_cycle_start_count(r) == 1);
  CHECK_STR(gpusched_cycle_start_job(r, 0), "high");
  CHECK(gpusched_cycle_waiting_count(r) == 1);
  gpusched_cycle_result_free(r);
  r = NULL;
  CHECK(gpusched_session_cycle(ses, 1100, GPUSCHED_CYCLE_DECISIONS_ONLY, &r, &err) == GPUSCHED_OK);
  CHECK(gpusched_cycle_start_count(r) == 1);
  CHECK_STR(gpusched_cycle_start_job(r, 0), "high");
  CHECK(gpusched_cycle_start_task(r, 0, 0, &task, &err) == GPUSCHED_OK);
  CHECK_STR(task.node_name, "n1");
  CHECK(task.gpu_count == 8);
  CHECK(gpusched_cycle_waiting_count(r) == 1);
  gpusched_cycle_result_free(r);
  /* small finishes: n0 has its 4 GPUs back; unknown names are errors. */
  CHECK(gpusched_session_finish(ses, "small", &err) == GPUSCHED_OK);
  CHECK(gpusched_state_idle_gpus(s, 0) == 4);
  CHECK(gpusched_session_finish(ses, "small", &err) == GPUSCHED_ERROR_UNKNOWN_NAME);
  CHECK_HAS(err.message, "\"small\": not running");
  CHECK(gpusched_session_cancel(ses, "huge", &err) == GPUSCHED_OK);
  CHECK(gpusched_session_pending_count(ses) == 0);
  CHECK(gpusched_session_cycle(NULL, 0, 0, &r, &err) == GPUSCHED_ERROR_INVALID_ARGUMENT);
  CHECK(r == NULL);
  gpusched_session_free(ses);
  gpusched_session_free(NULL);
  /* A session's queues the fairness family refuses. */
  ses = NULL;
  CHECK(gpusched_session_open(s, "{\"queues\": [{\"name\": \"a\", \"parent\": \"nope\"}]}", NULL, &ses, &err) != GPUSCHED_OK);
  CHECK(ses == NULL);
  CHECK_HAS(err.message, "nope");
  gpusched_jobs_free(jobs);
  gpusched_jobs_free(late);
  gpusched_state_free(s);
}

/* Cluster events change the state in place (API version 3), hand-worked with best fit:
 *   cordon n0, then a (3 GPUs) -> n1 GPUs 0,1,2 (n0 would leave fewer idle GPUs, but takes no work);
 *   uncordon n0, fail n1 (it holds 3000 milli-GPU, kept: events never release work);
 *   b (4 GPUs) -> n0 (n1 is down), then f (4 GPUs) is not now; n1 recovers: f -> n1 GPUs 3..6;
 *   GPU 7 of n1 unhealthy; MIG mode on GPU 0 of n0 is refused (b holds it), on GPU 7 of n1 accepted. */
/* The MIG choice by name in a session's options: the session keeps the picker it names (the options
 * text is gone after open). An empty A100: first fit creates a 1g.5gb at slice 0, frag-aware at 6. */
static void test_mig_placement(void) {
  static const char* kCluster =
      "{\"nodes\": [{\"name\": \"n0\", \"cpu\": 64, \"memory\": \"256Gi\","
      " \"gpus\": [{\"model\": \"A100-SXM4-40GB\", \"mig\": {\"instances\": []}}]}]}";
  const char* const options[2] = {"{\"mig_placement\": \"first-fit\"}", "{\"mig_placement\": \"frag-aware\"}"};
  const char* const want[2] = {"\"mig\":{\"create\":true,\"profile_index\":0,\"start\":0}",
                               "\"mig\":{\"create\":true,\"profile_index\":0,\"start\":6}"};
  gpusched_error err;
  int k;
  for (k = 0; k < 2; ++k) {
    gpusched_state* s = NULL;
    gpusched_jobs* jobs = NULL;
    gpusched_session* ses = NULL;
    gpusched_cycle_result* r = NULL;
    CHECK(gpusched_state_from_json(kCluster, &s, &err) == GPUSCHED_OK);
    CHECK(gpusched_jobs_from_json("{\"jobs\": [{\"name\": \"s\", \"cpu\": 1, \"mig_profile\": \"1g.5gb\"}]}", &jobs, &err) ==
          GPUSCHED_OK);
    if (s != NULL) CHECK(gpusched_session_open(s, NULL, options[k], &ses, &err) == GPUSCHED_OK);
    if (ses != NULL && jobs != NULL) {
      CHECK(gpusched_session_submit(ses, jobs, &err) == GPUSCHED_OK);
      CHECK(gpusched_session_cycle(ses, 0, 0, &r, &err) == GPUSCHED_OK);
      if (r != NULL) CHECK_HAS(gpusched_cycle_json(r), want[k]);
    }
    gpusched_cycle_result_free(r);
    gpusched_session_free(ses);
    gpusched_jobs_free(jobs);
    gpusched_state_free(s);
  }
}

static void test_events(void) {
  gpusched_state* s = three_nodes();
  gpusched_jobs* jobs = NULL;
  gpusched_result* r = NULL;
  gpusched_task task;
  gpusched_error err;
  int64_t held = -1;
  uint64_t generation = gpusched_state_generation(s);
  CHECK(gpusched_jobs_new(&jobs, &err) == GPUSCHED_OK);
  add(jobs, "a", 1, 4000, 3, 0);
  add(jobs, "b", 1, 4000, 4, 0);
  add(jobs, "f", 1, 2000, 4, 0);

  CHECK(gpusched_state_cordon(s, 0, 1, &err) == GPUSCHED_OK);
  CHECK(gpusched_state_schedulable(s, 0) == 0 && gpusched_state_schedulable(s, 1) == 1);
  CHECK(gpusched_state_generation(s) > generation);
  CHECK(gpusched_state_cordon(s, 0, 1, &err) == GPUSCHED_OK); /* repeated: no change */
  CHECK(gpusched_place(s, jobs, 0, "best-fit", 0, 0, &r, &err) == GPUSCHED_OK);
  CHECK(gpusched_result_task(r, 0, &task, &err) == GPUSCHED_OK);
  CHECK(task.node == 1 && task.gpu_count == 3 && task.gpus[0] == 0 && task.gpus[2] == 2);
  gpusched_result_free(r);
  CHECK(gpusched_state_cordon(s, 0, 0, &err) == GPUSCHED_OK);
  CHECK(gpusched_state_schedulable(s, 0) == 1);

  CHECK(gpusched_state_set_node_health(s, 1, 0, &held, &err) == GPUSCHED_OK);
  CHECK(held == 3000 && gpusched_state_healthy(s, 1) == 0 && gpusched_state_healthy(s, 0) == 1);
  CHECK(gpusched_place(s, jobs, 1, "best-fit", 0, 0, &r, &err) == GPUSCHED_OK);
  CHECK(gpusched_result_task(r, 0, &task, &err) == GPUSCHED_OK);
  CHECK(task.node == 0 && task.gpu_count == 4);
  gpusched_result_free(r);
  CHECK(gpusched_place(s, jobs, 2, "best-fit", 0, 0, &r, &err) == GPUSCHED_OK);
  CHECK(gpusched_result_verdict(r) == GPUSCHED_NOT_NOW);
  gpusched_result_free(r);
  CHECK(gpusched_state_set_node_health(s, 1, 1, NULL, &err) == GPUSCHED_OK);
  CHECK(gpusched_place(s, jobs, 2, "best-fit", 0, 0, &r, &err) == GPUSCHED_OK);
  CHECK(gpusched_result_task(r, 0, &task, &err) == GPUSCHED_OK);
  CHECK(task.node == 1 && task.gpu_count == 4 && task.gpus[0] == 3 && task.gpus[3] == 6);
  gpusched_result_free(r);

  CHECK(gpusched_state_set_gpu_health(s, 1, 7, 0, &err) == GPUSCHED_OK);
  CHECK(gpusched_state_gpu_healthy(s, 1, 7) == 0 && gpusched_state_gpu_healthy(s, 1, 6) == 1);
  CHECK(gpusched_state_idle_gpus(s, 1) == 0);
  CHECK(gpusched_state_set_gpu_health(s, 1, 7, 1, &err) == GPUSCHED_OK);
  CHECK(gpusched_state_idle_gpus(s, 1) == 1);

  CHECK(gpusched_state_set_mig_mode(s, 0, 0, 1, &err) == GPUSCHED_ERROR_STATE);
  CHECK_HAS(err.message, "set_mig_mode on n0 GPU 0: the GPU is in use");
  CHECK(gpusched_state_mig_mode(s, 0, 0) == 0);
  CHECK(gpusched_state_set_mig_mode(s, 1, 7, 1, &err) == GPUSCHED_OK);
  CHECK(gpusched_state_mig_mode(s, 1, 7) == 1 && gpusched_state_idle_gpus(s, 1) == 0);
  CHECK(gpusched_state_set_mig_mode(s, 1, 7, 0, &err) == GPUSCHED_OK);
  CHECK(gpusched_state_mig_mode(s, 1, 7) == 0 && gpusched_state_idle_gpus(s, 1) == 1);

  CHECK(gpusched_state_set_label(s, 2, "example.com/rack", "r1", &err) == GPUSCHED_OK);
  CHECK(gpusched_state_set_label(s, 2, "example.com/rack", NULL, &err) == GPUSCHED_OK);
  CHECK(gpusched_state_set_label(s, 2, NULL, "r1", &err) == GPUSCHED_ERROR_INVALID_ARGUMENT);
  CHECK(gpusched_state_set_label(s, 2, "k", "v\nw", &err) == GPUSCHED_ERROR_INVALID_INPUT);
  CHECK_STR(err.message, "value: control character 0x0a in \"v\\x0aw\"");
  CHECK(gpusched_state_set_label(s, 2, "k\xff", "v", &err) == GPUSCHED_ERROR_INVALID_INPUT);
  CHECK(gpusched_state_cordon(s, 3, 1, &err) == GPUSCHED_ERROR_INVALID_ARGUMENT);
  CHECK_HAS(err.message, "node: 3 is out of range (3 nodes)");
  CHECK(gpusched_state_set_gpu_health(s, 2, 0, 0, &err) == GPUSCHED_ERROR_INVALID_ARGUMENT);
  CHECK_HAS(err.message, "gpu: 0 is out of range (0 GPUs on n2)");
  CHECK(gpusched_state_cordon(NULL, 0, 1, &err) == GPUSCHED_ERROR_INVALID_ARGUMENT);
  CHECK(gpusched_state_schedulable(NULL, 0) == 0 && gpusched_state_mig_mode(s, 1, 8) == 0);
  gpusched_jobs_free(jobs);
  gpusched_state_free(s);
}

/* A placed job finishes: gpusched_release gives its tasks back, once, and only on the state it was
 * placed on. n0 has 4 GPUs and 16 cores: "a" (3 GPUs, 4 cores) leaves 1 idle GPU and 12 cores; its
 * release restores 4 and 16. */
static void test_release(void) {
  gpusched_state* s = three_nodes();
  gpusched_state* other = three_nodes();
  gpusched_jobs* jobs = NULL;
  gpusched_result* r = NULL;
  gpusched_result* dry = NULL;
  gpusched_result* none = NULL;
  gpusched_error err;
  CHECK(gpusched_jobs_new(&jobs, &err) == GPUSCHED_OK);
  add(jobs, "a", 1, 4000, 3, 0);
  add(jobs, "huge", 1, 4000, 64, 0);
  CHECK(gpusched_place(s, jobs, 0, "best-fit", 0, 0, &r, &err) == GPUSCHED_OK);
  CHECK(gpusched_state_idle_gpus(s, 0) == 1);
  CHECK(gpusched_release(other, r, &err) == GPUSCHED_ERROR_STATE); /* not placed there */
  CHECK_HAS(err.message, "holds nothing on this state");
  CHECK(gpusched_state_idle_gpus(s, 0) == 1);
  CHECK(gpusched_release(s, r, &err) == GPUSCHED_OK);
  CHECK(gpusched_state_idle_gpus(s, 0) == 4);
  CHECK(gpusched_state_free_cpu_milli(s, 0) == 16000);
  CHECK(gpusched_result_task_count(r) == 1); /* still readable */
  CHECK(gpusched_release(s, r, &err) == GPUSCHED_ERROR_STATE); /* once */
  CHECK(gpusched_state_idle_gpus(s, 0) == 4);
  CHECK(gpusched_release(NULL, r, &err) == GPUSCHED_ERROR_INVALID_ARGUMENT);
  CHECK(gpusched_release(s, NULL, &err) == GPUSCHED_ERROR_INVALID_ARGUMENT);
  /* A dry run and a job that did not place hold nothing. */
  CHECK(gpusched_place(s, jobs, 0, "best-fit", 0, GPUSCHED_PLACE_DRY_RUN, &dry, &err) == GPUSCHED_OK);
  CHECK(gpusched_result_verdict(dry) == GPUSCHED_PLACED);
  CHECK(gpusched_release(s, dry, &err) == GPUSCHED_ERROR_STATE);
  CHECK(gpusched_place_gang(s, jobs, 1, "best-fit", 0, 0, &none, &err) == GPUSCHED_OK);
  CHECK(gpusched_result_verdict(none) != GPUSCHED_PLACED);
  CHECK(gpusched_release(s, none, &err) == GPUSCHED_ERROR_STATE);
  CHECK(gpusched_state_idle_gpus(s, 0) == 4 && gpusched_state_idle_gpus(s, 1) == 8);
  gpusched_result_free(r);
  gpusched_result_free(dry);
  gpusched_result_free(none);
  gpusched_jobs_free(jobs);
  gpusched_state_free(s);
  gpusched_state_free(other);
}

/* Slurm's JSON (a real 22.05 capture, tests/fixtures/slurm): the state less the running jobs, the held
 * jobs planned as if released, and one conservative cycle as the slurm_test's hand-checked plan. */
static void test_slurm(const char* fixtures) {
  char path[4096];
  char *sinfo, *squeue;
  gpusched_state* s = NULL;
  gpusched_jobs* jobs = NULL;
  gpusched_cycle_result* c = NULL;
  gpusched_error err;
  snprintf(path, sizeof path, "%s/slurm/sinfo-8gpu.json", fixtures);
  sinfo = read_all(path);
  snprintf(path, sizeof path, "%s/slurm/squeue-held.json", fixtures);
  squeue = read_all(path);
  CHECK(sinfo != NULL && squeue != NULL);
  if (sinfo == NULL || squeue == NULL) return;
  CHECK(gpusched_state_from_slurm(sinfo, squeue, GPUSCHED_SLURM_PLAN_HELD, &s, &jobs, &err) == GPUSCHED_OK);
  CHECK(gpusched_state_node_count(s) == 1);
  CHECK(gpusched_state_idle_gpus(s, 0) == 2); /* 6 of 8 held by the two running jobs */
  CHECK(gpusched_jobs_count(jobs) == 4);
  CHECK_STR(gpusched_jobs_name(jobs, 0), "3");
  gpusched_jobs_free(jobs);
  gpusched_state_free(s);
  /* Held jobs skipped: none pending. */
  CHECK(gpusched_state_from_slurm(sinfo, squeue, 0, NULL, &jobs, &err) == GPUSCHED_OK);
  CHECK(gpusched_jobs_count(jobs) == 0);
  gpusched_jobs_free(jobs);
  CHECK(gpusched_cycle_slurm(sinfo, squeue, 1796394815, "{\"backfill\": \"conservative\", \"preempt\": false}",
                             GPUSCHED_SLURM_PLAN_HELD, &c, &err) == GPUSCHED_OK);
  CHECK(gpusched_cycle_start_count(c) == 1);
  CHECK_STR(gpusched_cycle_start_job(c, 0), "5");
  CHECK_HAS(gpusched_cycle_json(c), "\"reservations\"");
  gpusched_cycle_result_free(c);
  /* Errors: *out NULL, the field named. */
  s = (gpusched_state*)1;
  jobs = (gpusched_jobs*)1;
  CHECK(gpusched_state_from_slurm("{\"meta\": {\"plugin\": {\"type\": \"openapi/v0.0.99\"}}, \"nodes\": []}", NULL, 0, &s, &jobs, &err) ==
        GPUSCHED_ERROR_UNKNOWN_NAME);
  CHECK(s == NULL && jobs == NULL);
  CHECK_HAS(err.message, "sinfo: meta: meta.plugin: schema \"openapi/v0.0.99\"");
  CHECK(gpusched_state_from_slurm(NULL, NULL, 0, &s, &jobs, &err) == GPUSCHED_ERROR_INVALID_ARGUMENT);
  c = (gpusched_cycle_result*)1;
  CHECK(gpusched_cycle_slurm(sinfo, "[1", 0, NULL, 0, &c, &err) == GPUSCHED_ERROR_PARSE);
  CHECK(c == NULL);
  free(sinfo);
  free(squeue);
}

/* Policies of the caller's (gpusched/c/policy.h): "highest-id" scores a node by its id and counts
 * its calls through the user pointer; "broken" fails on n1. */
static int highest_id_score(void* user, const gpusched_node_view* node, const gpusched_task_view* task, int64_t* score,
                            const char** message) {
  (void)task;
  (void)message;
  ++*(int*)user;
  *score = node->id;
  return GPUSCHED_SCORE_OK;
}
static int broken_score(void* user, const gpusched_node_view* node, const gpusched_task_view* task, int64_t* score,
                        const char** message) {
  (void)user;
  (void)task;
  if (node->id == 1) {
    *message = "cannot score n1";
    return -3;
  }
  *score = 0;
  return GPUSCHED_SCORE_OK;
}

static size_t placed_node(gpusched_state* s, gpusched_jobs* jobs, size_t index, const char* policy, gpusched_status* status,
                          gpusched_error* err) {
  gpusched_result* r = NULL;
  gpusched_task task;
  size_t node = (size_t)-1;
  *status = gpusched_place(s, jobs, index, policy, 0, GPUSCHED_PLACE_DRY_RUN, &r, err);
  if (*status == GPUSCHED_OK && gpusched_result_verdict(r) == GPUSCHED_PLACED && gpusched_result_task(r, 0, &task, err) == GPUSCHED_OK)
    node = task.node;
  gpusched_result_free(r);
  return node;
}

static void test_policies(const char* plugin) {
  gpusched_state* s = three_nodes();
  gpusched_jobs* jobs = NULL;
  gpusched_cycle_result* c = NULL;
  gpusched_task task;
  gpusched_error err;
  gpusched_status status;
  int calls = 0;
  gpusched_policy_def highest = {GPUSCHED_POLICY_ABI, "highest-id", "the highest node id", 0, highest_id_score, NULL, &calls};
  gpusched_policy_def broken = {GPUSCHED_POLICY_ABI, "broken", NULL, 0, broken_score, NULL, NULL};
  gpusched_policy_def taken = highest;
  CHECK(gpusched_jobs_new(&jobs, &err) == GPUSCHED_OK);
  add(jobs, "one-gpu", 1, 1000, 1, 1000);
  CHECK(gpusched_state_add_policy(s, &highest, &err) == GPUSCHED_OK);
  CHECK(gpusched_state_add_policy(s, &broken, &err) == GPUSCHED_OK);
  /* best-fit takes n0 (fewer idle GPUs left); highest-id the fitting node of the highest id, n1 (n2
   * has no GPU: it is never scored, the library filters). */
  CHECK(placed_node(s, jobs, 0, "best-fit", &status, &err) == 0);
  CHECK(placed_node(s, jobs, 0, "highest-id", &status, &err) == 1);
  CHECK(calls == 2);
  /* A name taken, a definition without a score: refused. */
  CHECK(gpusched_state_add_policy(s, &taken, &err) == GPUSCHED_ERROR_INVALID_INPUT);
  CHECK_HAS(err.message, "highest-id");
  taken.name = "best-fit";
  CHECK(gpusched_state_add_policy(s, &taken, &err) == GPUSCHED_ERROR_INVALID_INPUT);
  taken.name = "no-score";
  taken.score = NULL;
  CHECK(gpusched_state_add_policy(s, &taken, &err) == GPUSCHED_ERROR_INVALID_INPUT);
  CHECK(gpusched_state_add_policy(NULL, &highest, &err) == GPUSCHED_ERROR_INVALID_ARGUMENT);
  /* A callback's error: GPUSCHED_ERROR_POLICY with its words, nothing placed. */
  CHECK(placed_node(s, jobs, 0, "broken", &status, &err) == (size_t)-1);
  CHECK(status == GPUSCHED_ERROR_POLICY);
  CHECK_HAS(err.message, "policy \"broken\" failed: score returned -3 on node \"n1\": \"cannot score n1\"");
  CHECK_STR(gpusched_status_name(GPUSCHED_ERROR_POLICY), "policy");
  /* The cycle takes the policy from its options; a failing one changes nothing (not even a dry run's
   * running jobs) and says why. */
  CHECK(gpusched_cycle(s, jobs, NULL, NULL, 0, "{\"policy\": \"highest-id\"}", 0, &c, &err) == GPUSCHED_OK);
  CHECK(gpusched_cycle_start_count(c) == 1);
  CHECK(gpusched_cycle_start_task(c, 0, 0, &task, &err) == GPUSCHED_OK);
  CHECK(task.node == 1);
  gpusched_cycle_result_free(c);
  c = NULL;
  CHECK(gpusched_cycle(s, jobs, NULL, NULL, 0, "{\"policy\": \"broken\"}", 0, &c, &err) == GPUSCHED_ERROR_POLICY);
  CHECK(c == NULL);
  CHECK(gpusched_cycle(s, jobs, NULL, NULL, 0, "{\"policy\": \"nope\"}", 0, &c, &err) == GPUSCHED_ERROR_UNKNOWN_NAME);
  CHECK(gpusched_cycle(s, jobs, NULL, NULL, 0, "{\"policy\": 3}", 0, &c, &err) == GPUSCHED_ERROR_INVALID_INPUT);
  CHECK_HAS(err.message, "options.policy");
  /* The first cycle committed one GPU on n1; the failed one added nothing. */
  CHECK(placed_node(s, jobs, 0, "highest-id", &status, &err) == 1);
  /* A plugin: the example best-fit decides as the built-in. */
  if (plugin) {
    CHECK(gpusched_state_load_plugin(s, plugin, &err) == GPUSCHED_OK);
    CHECK(placed_node(s, jobs, 0, "c-best-fit", &status, &err) == placed_node(s, jobs, 0, "best-fit", &status, &err));
    CHECK(gpusched_state_load_plugin(s, plugin, &err) == GPUSCHED_ERROR_INVALID_INPUT); /* its names are taken */
  }
  CHECK(gpusched_state_load_plugin(s, "/no/such/plugin.so", &err) == GPUSCHED_ERROR_IO);
  CHECK_HAS(err.message, "/no/such/plugin.so");
  gpusched_jobs_free(jobs);
  gpusched_state_free(s);
}

/* Orders (gpusched/c/policy.h). A job order: the latest submitted first. */
static int latest_first(void* user, const gpusched_job_view* job, int64_t* key, const char** message) {
  (void)message;
  ++*(int*)user;
  *key = -job->submit_time;
  return GPUSCHED_SCORE_OK;
}

static int no_key(void* user, const gpusched_job_view* job, int64_t* key, const char** message) {
  (void)user;
  (void)job;
  (void)key;
  *message = "cannot order";
  return 9;
}

/* n0 (4 GPUs) and n1 (8 GPUs), both held at t=1000: x (4 GPUs on n0) since 100, y (8 GPUs on n1) since
 * 500. urgent (4 GPUs, priority 10) can start by evicting either. The default order evicts x (it
 * loses 4 x 900 = 3,600 GPU-s, y 8 x 500 = 4,000); newest-first evicts y (it ran 500 s, x 900 s). */
static const char* kOrderRunning =
    "{\"jobs\": [{\"name\": \"x\", \"gpus\": 4, \"cpu\": 1, \"memory\": \"1Gi\", \"start_time\": 100,"
    " \"placement\": [{\"node\": \"n0\", \"gpus\": [0,1,2,3]}]},"
    " {\"name\": \"y\", \"gpus\": 8, \"cpu\": 1, \"memory\": \"1Gi\", \"start_time\": 500,"
    " \"placement\": [{\"node\": \"n1\", \"gpus\": [0,1,2,3,4,5,6,7]}]}]}";
static const char* kOrderPending =
    "{\"jobs\": [{\"name\": \"urgent\", \"gpus\": 4, \"cpu\": 1, \"memory\": \"1Gi\", \"priority\": 10}]}";
/* With nothing running, two 8-GPU jobs: only n1 holds one. first (priority 5, submitted 0, 3,600 s)
 * goes first by default; latest-first and shortest-first start second (submitted 10, 60 s). */
static const char* kTwoEights =
    "{\"jobs\": [{\"name\": \"first\", \"gpus\": 8, \"cpu\": 1, \"memory\": \"1Gi\", \"priority\": 5,"
    " \"runtime_estimate\": 3600},"
    " {\"name\": \"second\", \"gpus\": 8, \"cpu\": 1, \"memory\": \"1Gi\", \"submit_time\": 10, \"runtime_estimate\": 60}]}";

/* A victim order: the most GPUs first (a cost that falls as the GPUs freed grow); a negative cost. */
static int most_gpus(void* user, const gpusched_victim_view* v, int64_t* cost, const char** message) {
  (void)user;
  (void)message;
  *cost = 1000000 - v->freed_milli_gpu;
  return GPUSCHED_SCORE_OK;
}
static int negative_cost(void* user, const gpusched_victim_view* v, int64_t* cost, const char** message) {
  (void)user;
  (void)v;
  (void)message;
  *cost = -1;
  return GPUSCHED_SCORE_OK;
}

static const char* evicted_with(gpusched_state* s, gpusched_jobs* jobs, const char* options, gpusched_status* status) {
  static char name[32];
  gpusched_cycle_result* c = NULL;
  gpusched_error err;
  name[0] = '\0';
  *status = gpusched_cycle(s, jobs, NULL, kOrderRunning, 1000, options, GPUSCHED_CYCLE_DRY_RUN, &c, &err);
  if (*status == GPUSCHED_OK && gpusched_cycle_eviction_count(c) == 1)
    snprintf(name, sizeof name, "%s", gpusched_cycle_eviction_job(c, 0));
  gpusched_cycle_result_free(c);
  return name;
}

static const char* started_with(gpusched_state* s, gpusched_jobs* jobs, const char* options, gpusched_status* status) {
  static char name[32];
  gpusched_cycle_result* c = NULL;
  gpusched_error err;
  name[0] = '\0';
  *status = gpusched_cycle(s, jobs, NULL, NULL, 0, options, GPUSCHED_CYCLE_DRY_RUN, &c, &err);
  if (*status == GPUSCHED_OK && gpusched_cycle_start_count(c) == 1) snprintf(name, sizeof name, "%s", gpusched_cycle_start_job(c, 0));
  gpusched_cycle_result_free(c);
  return name;
}

static void test_orders(const char* plugin) {
  gpusched_state* s = three_nodes();
  gpusched_jobs *urgent = NULL, *eights = NULL;
  gpusched_error err;
  gpusched_status status;
  int calls = 0;
  gpusched_order_def latest = {GPUSCHED_POLICY_ABI, "latest-first", NULL, 0, latest_first, NULL, &calls};
  gpusched_order_def broken = {GPUSCHED_POLICY_ABI, "broken-order", NULL, 0, no_key, NULL, NULL};
  gpusched_order_def empty = {GPUSCHED_POLICY_ABI, "empty", NULL, 0, NULL, NULL, NULL};
  gpusched_order_def most = {GPUSCHED_POLICY_ABI, "most-gpus", NULL, 0, NULL, most_gpus, NULL};
  gpusched_order_def negative = {GPUSCHED_POLICY_ABI, "negative", NULL, 0, NULL, negative_cost, NULL};
  CHECK(gpusched_jobs_from_json(kOrderPending, &urgent, &err) == GPUSCHED_OK);
  CHECK(gpusched_jobs_from_json(kTwoEights, &eights, &err) == GPUSCHED_OK);
  CHECK(gpusched_state_add_order(s, &latest, &err) == GPUSCHED_OK);
  CHECK(gpusched_state_add_order(s, &broken, &err) == GPUSCHED_OK);
  CHECK(gpusched_state_add_order(s, &most, &err) == GPUSCHED_OK);
  CHECK(gpusched_state_add_order(s, &negative, &err) == GPUSCHED_OK);
  CHECK(gpusched_state_add_order(s, &latest, &err) == GPUSCHED_ERROR_INVALID_INPUT); /* taken */
  CHECK(gpusched_state_add_order(s, &empty, &err) == GPUSCHED_ERROR_INVALID_INPUT);
  CHECK_HAS(err.message, "neither a key nor a victim_cost");
  /* Job order. */
  CHECK_STR(started_with(s, eights, NULL, &status), "first");
  CHECK_STR(started_with(s, eights, "{\"order\": \"latest-first\"}", &status), "second");
  CHECK(calls > 0);
  CHECK_STR(started_with(s, eights, "{\"order\": \"submit-order\"}", &status), "first");
  started_with(s, eights, "{\"order\": \"broken-order\"}", &status);
  CHECK(status == GPUSCHED_ERROR_POLICY);
  started_with(s, eights, "{\"order\": \"nope\"}", &status);
  CHECK(status == GPUSCHED_ERROR_UNKNOWN_NAME);
  started_with(s, eights, "{\"victim_order\": \"latest-first\"}", &status); /* a job order only */
  CHECK(status == GPUSCHED_ERROR_UNKNOWN_NAME);
  /* Victim order: the built-in by name, and the plugin's, which decides as it. */
  CHECK_STR(evicted_with(s, urgent, NULL, &status), "x");
  CHECK_STR(evicted_with(s, urgent, "{\"victim_order\": \"newest-first\"}", &status), "y");
  CHECK_STR(evicted_with(s, urgent, "{\"victim_order\": \"fewest-gpus\"}", &status), "x");
  CHECK_STR(evicted_with(s, urgent, "{\"victim_order\": \"most-gpus\"}", &status), "y");
  evicted_with(s, urgent, "{\"victim_order\": \"negative\"}", &status);
  CHECK(status == GPUSCHED_ERROR_POLICY);
  if (plugin) {
    CHECK(gpusched_state_load_plugin(s, plugin, &err) == GPUSCHED_OK);
    CHECK_STR(evicted_with(s, urgent, "{\"victim_order\": \"c-newest-first\"}", &status), "y");
    CHECK_STR(started_with(s, eights, "{\"order\": \"c-shortest-first\"}", &status), "second"); /* 60 s < 3600 s */
  }
  CHECK(gpusched_state_idle_gpus(s, 0) == 4 && gpusched_state_idle_gpus(s, 1) == 8); /* dry runs */
  gpusched_jobs_free(urgent);
  gpusched_jobs_free(eights);
  gpusched_state_free(s);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: gpusched_capi_test FIXTURES_DIR\n");
    return 2;
  }
  test_version();
  test_place();
  test_job_spec_errors();
  test_state_errors();
  test_gang();
  test_fairshare(argv[1]);
  test_cycle();
  test_session();
  test_mig_placement();
  test_events();
  test_release();
  test_slurm(argv[1]);
  test_policies(argc > 2 ? argv[2] : NULL);
  test_orders(argc > 3 ? argv[3] : NULL);
  printf("%d checks, %d failed\n", checks, failures);
  return failures == 0 ? 0 : 1;
}
