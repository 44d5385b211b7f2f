// gpusched/core/outcome.hpp — the one answer vocabulary of every policy family.
//
// What it is for. Every decision gpusched makes (a task's node, a gang, a MIG instance, an admission)
// ends in one of four verdicts, said the same way in every family:
//
//   kPlaced      it fits, here is where (the family's own result carries the assignment);
//   kNotNow      it fits this cluster once resources free up (running work finishes, lent quota comes
//                back, a reservation ends): wait, or preempt;
//   kInfeasible  it cannot fit even if everything preemptible were freed, or never on this cluster
//                (too many GPUs for any node, a MIG profile no GPU model offers, a topology domain
//                smaller than the gang);
//   kInvalid     the request itself is inconsistent (a spec error, not a capacity question).
//
// Why it is shaped so. A scheduler asks millions of these questions and explains only a few, so the
// reasons are structured values (`Reason`: what kind, which resource, the numbers) and are formatted
// into text only on request (`to_string`). A `Reason` never owns a string: the subject it names (a
// group, a queue, a level) is an index the family's result documents, so producing reasons does not
// allocate per reason.
//
// Errors are the other half: bad input (a file, a view, a spec) is an `Error` value (core/result.hpp)
// with an `ErrorCode` and the field path, never an exception and never a crash.
//
//   Outcome o = ...;                       // from any family
//   if (o.verdict == Verdict::kPlaced) ... // the family's result holds the placement
//   else log(to_string(o));                // "not now: 900 insufficient GPUs (need 8, have 6 GPUs)"
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gpusched {

enum class Verdict : std::uint8_t { kPlaced = 0, kNotNow, kInfeasible, kInvalid };

constexpr std::string_view verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kPlaced: return "placed";
    case Verdict::kNotNow: return "not now";
    case Verdict::kInfeasible: return "infeasible";
    case Verdict::kInvalid: return "invalid";
  }
  return "?";
}

// The unit of a reason's numbers (kNone when it has none, e.g. a selector mismatch). The resource
// dimensions match core/resources.hpp's `Resource`; the others count things.
enum class Unit : std::uint8_t {
  kNone = 0,
  kMilliCpu,
  kMemoryBytes,
  kGpus,        // whole GPUs
  kMilliGpu,    // GPU share
  kGpuMemoryBytes,
  kMigSlices,   // memory slices of a MIG GPU
  kNodes,
  kDomains,
  kTasks,
};

constexpr std::string_view unit_name(Unit u) {
  switch (u) {
    case Unit::kNone: return "";
    case Unit::kMilliCpu: return "milli-CPU";
    case Unit::kMemoryBytes: return "bytes";
    case Unit::kGpus: return "GPUs";
    case Unit::kMilliGpu: return "milli-GPU";
    case Unit::kGpuMemoryBytes: return "GPU memory bytes";
    case Unit::kMigSlices: return "MIG slices";
    case Unit::kNodes: return "nodes";
    case Unit::kDomains: return "domains";
    case Unit::kTasks: return "tasks";
  }
  return "?";
}

// Every reason any family gives, one name per concept. Node-level kinds mirror FitReason (the
// per-node filter); the others belong to one family each but share the enum so that a composed
// decision (fair share -> gang -> topology -> GPU/MIG pick) reports them uniformly.
enum class ReasonKind : std::uint16_t {
  // one node and one task (cluster/cluster_state.hpp FitReason)
  kNodeUnschedulable = 0,
  kNodeUnhealthy,
  kSelectorMismatch,
  kGpuModelNotAllowed,
  kInsufficientCpu,
  kInsufficientMemory,
  kInsufficientGpus,
  kInsufficientGpuShare,
  kInsufficientGpuMemory,
  // MIG
  kNoMigProfile,          // no GPU model of the cluster offers the requested profile
  kNoMigPlacement,        // no MIG GPU has the free slices at a valid start slot
  kMigDisabled,           // the GPUs that could serve it are not in MIG mode
  // gangs and topology
  kTooFewTasksFit,        // fewer tasks of a group fit than its minimum
  kNoDomainFits,          // no topology domain at the required level holds the gang
  kSpreadUnsatisfiable,   // spread/anti-affinity asks for more domains or nodes than exist
  kSearchBudget,          // the effort budget ran out before a proof (undecided)
  // fair share and quotas
  kNoSuchQueue,
  kNotLeafQueue,
  kNoFlavorOffered,
  kOverNominalQuota,
  kOverBorrowingLimit,
  kCohortExhausted,
  kReclaimable,           // within nominal quota, but lent out: reclaim would admit it
  kClusterFull,           // quota allows it, the cluster has not enough free
  kBehindStrictHead,      // a StrictFIFO queue is blocked at its head
  // time and scheduling cycle
  kReservedForOther,      // capacity is held for another job's reservation or preemption
  kBackoff,               // requeued after a failure, waiting out its backoff
  kOther,
  // input amounts (appended by fairness)
  kInvalidAmount,         // a request below zero, or a total (request, priority + aging) beyond 64 bits
  // MIG (appended by mig)
  kNoIdleMigInstance,     // static MIG: no idle instance of the profile (re-partitioning could make one)
  // appended by the gang family
  kNoPlacementExists,     // every bound holds, but the exact search proved no placement on this state
  // appended by backfill (scheduler/backfill.hpp)
  kBeyondWindow,          // no start found before now + the backfill window
  kBeyondDepth,           // past the backfill depth: not tested this cycle
};

constexpr std::string_view reason_name(ReasonKind k) {
  switch (k) {
    case ReasonKind::kNodeUnschedulable: return "node unschedulable";
    case ReasonKind::kNodeUnhealthy: return "node unhealthy";
    case ReasonKind::kSelectorMismatch: return "node selector mismatch";
    case ReasonKind::kGpuModelNotAllowed: return "GPU model not allowed";
    case ReasonKind::kInsufficientCpu: return "insufficient CPU";
    case ReasonKind::kInsufficientMemory: return "insufficient memory";
    case ReasonKind::kInsufficientGpus: return "insufficient GPUs";
    case ReasonKind::kInsufficientGpuShare: return "insufficient GPU share";
    case ReasonKind::kInsufficientGpuMemory: return "insufficient GPU memory";
    case ReasonKind::kNoMigProfile: return "no GPU model offers the MIG profile";
    case ReasonKind::kNoMigPlacement: return "no free MIG placement";
    case ReasonKind::kMigDisabled: return "MIG disabled on the GPUs that could serve it";
    case ReasonKind::kTooFewTasksFit: return "too few tasks fit";
    case ReasonKind::kNoDomainFits: return "no topology domain fits";
    case ReasonKind::kSpreadUnsatisfiable: return "spread cannot be satisfied";
    case ReasonKind::kSearchBudget: return "search budget exhausted";
    case ReasonKind::kNoSuchQueue: return "no such queue";
    case ReasonKind::kNotLeafQueue: return "queue is not a leaf";
    case ReasonKind::kNoFlavorOffered: return "no flavor offered";
    case ReasonKind::kOverNominalQuota: return "over nominal quota";
    case ReasonKind::kOverBorrowingLimit: return "over borrowing limit";
    case ReasonKind::kCohortExhausted: return "cohort exhausted";
    case ReasonKind::kReclaimable: return "quota lent out (reclaimable)";
    case ReasonKind::kClusterFull: return "cluster full";
    case ReasonKind::kBehindStrictHead: return "behind the head of a StrictFIFO queue";
    case ReasonKind::kReservedForOther: return "capacity reserved for another job";
    case ReasonKind::kBackoff: return "backing off after a failure";
    case ReasonKind::kOther: return "other";
    case ReasonKind::kInvalidAmount: return "amount negative or beyond 64 bits";
    case ReasonKind::kNoIdleMigInstance: return "no idle MIG instance of the profile";
    case ReasonKind::kNoPlacementExists: return "no placement satisfies the constraints";
    case ReasonKind::kBeyondWindow: return "no start within the backfill window";
    case ReasonKind::kBeyondDepth: return "beyond the backfill depth (not tested)";
  }
  return "?";
}

// One structured reason. `count` is how many candidates (nodes, domains, GPUs) failed this way;
// `needed`/`available` are in `unit`, -1 when not meaningful. `subject` indexes the family's own list (a group, a queue, a level), -1 none.
struct Reason {
  ReasonKind kind = ReasonKind::kOther;
  Unit unit = Unit::kNone;
  std::int64_t needed = -1;
  std::int64_t available = -1;
  std::uint64_t count = 0;
  std::int32_t subject = -1;
  friend bool operator==(const Reason&, const Reason&) = default;
};

// "900 insufficient GPUs (need 8, have 6 GPUs)" — the count only when set.
inline std::string to_string(const Reason& r) {
  std::string out;
  if (r.count > 0) out += std::to_string(r.count) + " ";
  out += reason_name(r.kind);
  if (r.needed >= 0 || r.available >= 0) {
    out += " (";
    if (r.needed >= 0) out += "need " + std::to_string(r.needed);
    if (r.needed >= 0 && r.available >= 0) out += ", ";
    if (r.available >= 0) out += "have " + std::to_string(r.available);
    if (r.unit != Unit::kNone) {
      out += " ";
      out += unit_name(r.unit);
    }
    out += ")";
  }
  return out;
}

// A verdict with its reasons: what every family's result can be reduced to.
struct Outcome {
  Verdict verdict = Verdict::kPlaced;
  std::vector<Reason> reasons;  // empty when placed

  bool placed() const { return verdict == Verdict::kPlaced; }
  static Outcome placed_outcome() { return {}; }
  static Outcome with(Verdict v, Reason r) { return {v, {r}}; }
};

// "not now: 900 insufficient GPUs (need 8, have 6), 313 GPU model not allowed"
inline std::string to_string(const Outcome& o) {
  std::string out(verdict_name(o.verdict));
  for (std::size_t i = 0; i < o.reasons.size(); ++i) {
    out += i == 0 ? ": " : ", ";
    out += to_string(o.reasons[i]);
  }
  return out;
}

}  // namespace gpusched
