// The campaign's lint on a thread of its own (fuzz/background_cost_check.h): results come back
// in the order the partitionings were handed over, with what the check found in each; a full
// queue makes the job wait; finishing waits for the rest, or gives up when cancelled.
#include "fuzz/background_cost_check.h"

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/hlo_parser.h"

namespace spmdcheck::fuzz {
namespace {

// A module whose entry has `copies` copy instructions after its parameter.
std::unique_ptr<HloModule> ModuleWith(int copies) {
  std::string text = "HloModule m\nENTRY e {\n  v0 = f32[2] parameter(0)\n";
  for (int i = 1; i <= copies; ++i)
    absl::StrAppend(&text, "  v", i, " = f32[2] copy(v", i - 1, ")\n");
  absl::StrAppend(&text, "  ROOT r = f32[2] copy(v", copies, ")\n}\n");
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  return parsed.ok() ? std::move(parsed->module) : nullptr;
}

CostCheckTask TaskWith(int copies, int64_t index) {
  CostCheckTask task;
  task.case_index = index;
  task.case_seed = static_cast<uint64_t>(100 + index);
  task.program = ModuleWith(0);
  task.partitioned = ModuleWith(copies);
  task.partitioned_text = absl::StrCat("copies ", copies);
  return task;
}

// Finds one "cheaper chain" per module with an odd instruction count, naming the count and the
// text it was given, and whether it saw the judged module or the program.
std::vector<CostFinding> OddModules(const HloModule& partitioned, const std::string& text,
                                    const HloModule& global) {
  const size_t n = partitioned.entry()->instructions().size();
  if (n % 2 == 0) return {};
  return {{"odd", text,
           absl::StrCat(n, " instructions, global of ", global.entry()->instructions().size())}};
}

TEST(BackgroundCostCheck, ResultsComeBackInOrderWithWhatTheCheckFound) {
  BackgroundCostCheck checks(OddModules, 2);
  std::vector<CostCheckResult> taken;
  for (int i = 0; i < 6; ++i) {
    checks.Submit(TaskWith(i, i));
    for (CostCheckResult& r : checks.TakeFinished()) taken.push_back(std::move(r));
  }
  for (CostCheckResult& r : checks.Finish(nullptr)) taken.push_back(std::move(r));
  ASSERT_EQ(taken.size(), 6u);
  EXPECT_EQ(checks.pending(), 0u);
  for (int i = 0; i < 6; ++i) {
    const CostCheckResult& r = taken[static_cast<size_t>(i)];
    EXPECT_EQ(r.task.case_index, i);
    EXPECT_EQ(r.task.case_seed, static_cast<uint64_t>(100 + i));
    ASSERT_NE(r.task.partitioned, nullptr);  // The module comes back for the hand-over.
    // i copies plus the parameter and the root: odd when i is odd.
    if (i % 2 == 1) {
      ASSERT_EQ(r.cheaper.size(), 1u) << i;
      EXPECT_EQ(r.cheaper[0].message, absl::StrCat("copies ", i));
      EXPECT_EQ(r.cheaper[0].proposal, absl::StrCat(i + 2, " instructions, global of 2"));
    } else {
      EXPECT_TRUE(r.cheaper.empty()) << i;
    }
    EXPECT_GE(r.seconds, 0.0);
  }
}

TEST(BackgroundCostCheck, TheJudgedModuleIsWhatTheCheckSeesWhenThereIsOne) {
  BackgroundCostCheck checks(OddModules, 1);
  CostCheckTask task = TaskWith(1, 0);
  task.judged = ModuleWith(3);
  checks.Submit(std::move(task));
  std::vector<CostCheckResult> done = checks.Finish(nullptr);
  ASSERT_EQ(done.size(), 1u);
  ASSERT_EQ(done[0].cheaper.size(), 1u);
  EXPECT_EQ(done[0].cheaper[0].proposal, "3 instructions, global of 5");
}

// A cost check that counts its calls and blocks each until `release` is set.
struct BlockedCheck {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> started{0};
  CostCheck Check() {
    return [this](const HloModule&, const std::string&, const HloModule&) {
      ++started;
      released.wait();
      return std::vector<CostFinding>{};
    };
  }
};

TEST(BackgroundCostCheck, AFullQueueMakesTheJobWaitAndCancellingDropsTheRest) {
  BlockedCheck blocked;
  auto checks = std::make_unique<BackgroundCostCheck>(blocked.Check(), 2);
  checks->Submit(TaskWith(0, 0));  // Runs and blocks.
  checks->Submit(TaskWith(0, 1));  // Waits.
  std::future<double> third =
      std::async(std::launch::async, [&] { return checks->Submit(TaskWith(0, 2)); });
  // Two unfinished: the third hand-over cannot go through while the first check is blocked.
  EXPECT_EQ(third.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout);
  EXPECT_EQ(checks->pending(), 2u);
  EXPECT_TRUE(checks->TakeFinished().empty());
  // Cancelled at once: nothing finished comes back, and nothing hangs.
  EXPECT_TRUE(checks->Finish([] { return true; }).empty());
  blocked.release.set_value();
  EXPECT_GT(third.get(), 0.1);  // It waited until the first check finished.
  std::vector<CostCheckResult> rest = checks->Finish(nullptr);
  ASSERT_EQ(rest.size(), 3u);
  EXPECT_EQ(rest[2].task.case_index, 2);
  EXPECT_EQ(blocked.started.load(), 3);
  checks.reset();  // Joins the thread.
}

TEST(BackgroundCostCheck, DestroyingWithChecksWaitingDoesNotRunThem) {
  BlockedCheck blocked;
  auto checks = std::make_unique<BackgroundCostCheck>(blocked.Check(), 3);
  checks->Submit(TaskWith(0, 0));
  checks->Submit(TaskWith(0, 1));
  checks->Submit(TaskWith(0, 2));
  while (blocked.started.load() == 0) std::this_thread::yield();
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    blocked.release.set_value();
  });
  checks.reset();  // Waits for the running check only.
  releaser.join();
  EXPECT_EQ(blocked.started.load(), 1);
}

}  // namespace
}  // namespace spmdcheck::fuzz
