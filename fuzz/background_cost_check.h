// The campaign's cost check (the collective lint on a correct partitioning) on a thread of its
// own: a job hands each correct partitioning over and goes on to its next case, so that the
// lint runs while the partitioner under test compiles that case (XLA compiles in its worker
// process) instead of before it. The job takes the finished checks back between cases, in the
// order it handed them over, and records and reduces their findings itself (a reduction needs
// the job's partitioner, which only the job's thread talks to).
//
// At most `max_pending` checks wait or run at a time; handing over one more waits for the
// oldest to finish, so a slow lint slows the campaign instead of piling up modules.
#ifndef SPMDCHECK_FUZZ_BACKGROUND_COST_CHECK_H_
#define SPMDCHECK_FUZZ_BACKGROUND_COST_CHECK_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fuzz/campaign.h"
#include "ir/hlo_module.h"
#include "target/partitioner_under_test.h"

namespace spmdcheck::fuzz {

// One correct partitioning to look at, and what the job needs to act on a finding in it.
struct CostCheckTask {
  target::PartitionerUnderTest* partitioner = nullptr;  // The job's; for the hand-over.
  int64_t case_index = 0;
  uint64_t case_seed = 0;
  // The case's program (for a reduction), shared by the tasks of one case.
  std::shared_ptr<const HloModule> program;
  std::unique_ptr<HloModule> partitioned;
  std::string partitioned_text;
  // What the partitioning was judged against, when it is not `program` (XLA's received module).
  std::unique_ptr<HloModule> judged;

  const HloModule& global() const { return judged != nullptr ? *judged : *program; }
};

struct CostCheckResult {
  CostCheckTask task;
  std::vector<CostFinding> cheaper;  // Empty: nothing proved cheaper.
  double seconds = 0;                // The cost check's own time.
};

class BackgroundCostCheck {
 public:
  BackgroundCostCheck(CostCheck check, size_t max_pending);
  // Waits for the check in hand (the others are dropped) and joins the thread.
  ~BackgroundCostCheck();
  BackgroundCostCheck(const BackgroundCostCheck&) = delete;
  BackgroundCostCheck& operator=(const BackgroundCostCheck&) = delete;

  // Hands a partitioning over. Waits while `max_pending` are handed over and not taken back;
  // returns the seconds it waited.
  double Submit(CostCheckTask task);
  // The checks finished so far, in the order they were handed over (one that finished while an
  // earlier one still runs waits for it).
  std::vector<CostCheckResult> TakeFinished();
  // Waits for every check handed over, then takes them all. `cancelled` (polled) gives up
  // waiting: what is not finished then is dropped.
  std::vector<CostCheckResult> Finish(const std::function<bool()>& cancelled);
  // Handed over and not taken back yet.
  size_t pending() const;

 private:
  void Run();

  const CostCheck check_;
  const size_t max_pending_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  // Handed over, in order; the first `done_` of them are finished.
  std::deque<CostCheckResult> queue_;
  size_t done_ = 0;
  bool closing_ = false;
  std::thread thread_;
};

}  // namespace spmdcheck::fuzz

#endif  // SPMDCHECK_FUZZ_BACKGROUND_COST_CHECK_H_
