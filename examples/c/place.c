/* examples/c/place.c — placing jobs from C through the C API (include/gpusched/c/gpusched.h).
 *
 *   place CLUSTER.json JOBS.json [POLICY]
 *
 * Reads the two documents of `gpusched place` (docs/formats.md), places the jobs in file order with
 * POLICY (default best-fit), each all or nothing, and prints one line per task or why a job waits.
 * Compiled as C99; ctest compares its output on examples/cluster.json and examples/jobs.json with
 * examples/c/place.expected: the same bindings `gpusched place` prints for these files (the tool
 * places by priority, this example in file order; here only the unschedulable too-big moves). Everything
 * it makes is freed. */
#include <stdio.h>
#include <stdlib.h>

#include "gpusched/c/gpusched.h"

static int fail(const gpusched_error* err) {
  fprintf(stderr, "place: %s (%s)\n", err->message, gpusched_status_name(err->code));
  return 2;
}

int main(int argc, char** argv) {
  gpusched_error err;
  gpusched_state* state = NULL;
  gpusched_jobs* jobs = NULL;
  const char* policy = argc > 3 ? argv[3] : "best-fit";
  size_t j, t, g, placed = 0;
  int rc = 0;

  if (argc < 3) {
    fprintf(stderr, "usage: place CLUSTER.json JOBS.json [POLICY]\n");
    return 2;
  }
  printf("gpusched %s (C API %d), policy %s\n", gpusched_version(), gpusched_c_api_version(), policy);
  if (gpusched_state_from_file(argv[1], &state, &err) != GPUSCHED_OK) return fail(&err);
  if (gpusched_jobs_from_file(argv[2], &jobs, &err) != GPUSCHED_OK) {
    gpusched_state_free(state);
    return fail(&err);
  }
  for (j = 0; j < gpusched_jobs_count(jobs) && rc == 0; ++j) {
    gpusched_result* result = NULL;
    if (gpusched_place(state, jobs, j, policy, 42, 0, &result, &err) != GPUSCHED_OK) {
      rc = fail(&err);
      break;
    }
    if (gpusched_result_verdict(result) == GPUSCHED_PLACED) {
      ++placed;
      for (t = 0; t < gpusched_result_task_count(result); ++t) {
        gpusched_task task;
        if (gpusched_result_task(result, t, &task, &err) != GPUSCHED_OK) {
          rc = fail(&err);
          break;
        }
        printf("%-14s %-9s %2d  %-8s", gpusched_jobs_name(jobs, j), task.group, (int)task.replica, task.node_name);
        for (g = 0; g < task.gpu_count; ++g) printf("%s%u", g ? "," : " gpus ", (unsigned)task.gpus[g]);
        if (task.gpu_count == 1 && task.gpu_milli < 1000) printf(" (%dm)", (int)task.gpu_milli);
        printf("\n");
      }
    } else {
      printf("%-14s waits: %s\n", gpusched_jobs_name(jobs, j), gpusched_result_message(result));
    }
    gpusched_result_free(result);
  }
  if (rc == 0) printf("%lu of %lu jobs placed\n", (unsigned long)placed, (unsigned long)gpusched_jobs_count(jobs));
  gpusched_jobs_free(jobs);
  gpusched_state_free(state);
  return rc;
}
