// The XLA worker client against a fake worker (tests/data/fake_xla_worker.py) that misbehaves:
// every failure is a clear status, never a hang or a verdict; a dead worker is restarted.
#include <cstdlib>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/hlo_parser.h"
#include "target/xla_partitioner.h"
#include "target/xla_worker.h"
#include "tests/shared_dir.h"

namespace spmdcheck::target {
namespace {

using ::testing::HasSubstr;

XlaWorkerOptions Fake(const char* mode) {
  setenv("FAKE_WORKER_MODE", mode, 1);
  XlaWorkerOptions options;
  options.python = "/usr/bin/python3";
  options.worker_script = ::spmdcheck::test_support::SourcePath("tests/data/fake_xla_worker.py");
  options.start_timeout_seconds = 5;
  return options;
}

TEST(XlaWorkerClient, AnswersAndVersions) {
  XlaWorker worker(Fake("ok"));
  absl::StatusOr<WorkerAnswer> answer = worker.Call("compile", {{"hlo", "x"}}, 10);
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_TRUE(answer->ok());
  EXPECT_EQ(worker.versions(), "jax 0.0.fake, jaxlib 0.0.fake");
  EXPECT_EQ(answer->log, std::vector<std::string>{"W fake warning"});
}

TEST(XlaWorkerClient, SumsTheSecondsXlaReportsSpendingInJaxlib) {
  XlaWorker worker(Fake("ok"));
  EXPECT_EQ(worker.xla_seconds(), 0.0);
  ASSERT_TRUE(worker.Call("compile", {{"hlo", "x"}}, 10).ok());
  ASSERT_TRUE(worker.Call("execute", {{"handle", 1}}, 10).ok());
  EXPECT_DOUBLE_EQ(worker.xla_seconds(), 0.5);
}

TEST(XlaWorkerClient, GarbageIsDataLoss) {
  XlaWorker worker(Fake("garbage"));
  absl::StatusOr<WorkerAnswer> answer = worker.Call("compile", {}, 10);
  EXPECT_TRUE(absl::IsDataLoss(answer.status())) << answer.status();
  EXPECT_THAT(answer.status().message(), HasSubstr("not json"));
}

TEST(XlaWorkerClient, AnswerToAnotherRequestIsDataLoss) {
  XlaWorker worker(Fake("wrong-id"));
  EXPECT_TRUE(absl::IsDataLoss(worker.Call("compile", {}, 10).status()));
}

TEST(XlaWorkerClient, DeathIsAbortedWithXlasMessageAndTheWorkerRestarts) {
  XlaWorker worker(Fake("die"));
  absl::StatusOr<WorkerAnswer> answer = worker.Call("compile", {}, 10);
  ASSERT_TRUE(absl::IsAborted(answer.status())) << answer.status();
  // The CHECK line is found before a stack trace longer than the output kept.
  EXPECT_THAT(answer.status().message(), HasSubstr("spmd_partitioner.cc:123] Check failed: fake"));
  EXPECT_THAT(answer.status().message(), HasSubstr("signal 6"));
  EXPECT_THAT(answer.status().message(), HasSubstr("SomeFrame199"));
  setenv("FAKE_WORKER_MODE", "ok", 1);
  absl::StatusOr<WorkerAnswer> again = worker.Call("compile", {}, 10);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(worker.generation(), 2);
}

TEST(XlaWorkerClient, HangIsDeadlineExceeded) {
  XlaWorker worker(Fake("hang"));
  absl::StatusOr<WorkerAnswer> answer = worker.Call("compile", {}, 0.5);
  EXPECT_TRUE(absl::IsDeadlineExceeded(answer.status())) << answer.status();
}

TEST(XlaWorkerClient, NoGreetingIsUnavailable) {
  XlaWorkerOptions options = Fake("no-hello");
  options.start_timeout_seconds = 0.5;
  XlaWorker worker(options);
  EXPECT_TRUE(absl::IsUnavailable(worker.Call("compile", {}, 10).status()));
}

TEST(XlaWorkerClient, FailedImportIsUnavailableWithTheReason) {
  XlaWorker worker(Fake("fail-import"));
  absl::StatusOr<WorkerAnswer> answer = worker.Call("compile", {}, 10);
  ASSERT_TRUE(absl::IsUnavailable(answer.status()));
  EXPECT_THAT(answer.status().message(), HasSubstr("No module named 'jax'"));
}

TEST(XlaWorkerClient, MissingPythonIsUnavailable) {
  XlaWorkerOptions options = Fake("ok");
  options.python = "/nonexistent/venv/bin/python";
  XlaWorker worker(options);
  absl::StatusOr<WorkerAnswer> answer = worker.Call("compile", {}, 10);
  ASSERT_TRUE(absl::IsUnavailable(answer.status()));
  EXPECT_THAT(answer.status().message(), HasSubstr("/nonexistent/venv/bin/python"));
}

TEST(XlaWorkerClient, RecyclesAfterKRequests) {
  XlaWorkerOptions options = Fake("ok");
  options.recycle_after = 2;
  XlaWorker worker(options);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(worker.Call("compile", {}, 10).ok());
  EXPECT_EQ(worker.generation(), 3);
}

// A compiled executable keeps its process: recycling between a compile and the execution of its
// handle made a campaign's XLA run "inconclusive: no executable with handle 63".
TEST(XlaWorkerClient, DoesNotRecycleWhileAnExecutableIsLive) {
  XlaWorkerOptions options = Fake("ok");
  options.recycle_after = 2;
  XlaWorker worker(options);
  ASSERT_TRUE(worker.Call("compile", {}, 10).ok());
  worker.RetainExecutable();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(worker.Call("execute", {}, 10).ok());
  EXPECT_EQ(worker.generation(), 1);
  worker.ReleaseExecutable();
  ASSERT_TRUE(worker.Call("compile", {}, 10).ok());
  EXPECT_EQ(worker.generation(), 2);
}

// The partitioner maps each worker failure onto a partitioning outcome, never a verdict.
TEST(XlaPartitionerOverFakeWorker, FailuresBecomeOutcomes) {
  absl::StatusOr<ParsedModule> m = ParseHloModule(R"(HloModule m, num_partitions=2
ENTRY e {
  ROOT p = f32[2] parameter(0), sharding={devices=[2]<=[2]}
})");
  ASSERT_TRUE(m.ok());
  struct Case {
    const char* mode;
    PartitionStatus status;
  };
  for (const Case& c :
       {Case{"die", PartitionStatus::kCrash}, Case{"hang", PartitionStatus::kTimeout},
        Case{"garbage", PartitionStatus::kUnsupported},
        Case{"fail-import", PartitionStatus::kUnavailable}}) {
    TargetOptions target;
    target.compile_timeout_seconds = 1;
    XlaWorkerOptions worker_options = Fake(c.mode);
    XlaPartitioner partitioner("xla", std::make_shared<XlaWorker>(worker_options), target);
    absl::StatusOr<PartitionOutput> out = partitioner.Partition(*m->module, 2);
    ASSERT_TRUE(out.ok()) << c.mode << ": " << out.status();
    EXPECT_EQ(out->status, c.status) << c.mode << ": " << out->message;
    EXPECT_FALSE(out->message.empty()) << c.mode;
  }
}

// A Shardy verdict needs evidence that Shardy ran: after a silent fallback it is unknown.
TEST(XlaPartitionerOverFakeWorker, ShardyFallbackIsNeverAShardyResult) {
  absl::StatusOr<ParsedModule> m = ParseHloModule(R"(HloModule m, num_partitions=2
ENTRY e {
  ROOT p = f32[2] parameter(0), sharding={devices=[2]<=[2]}
})");
  ASSERT_TRUE(m.ok());
  XlaPartitioner shardy("shardy", std::make_shared<XlaWorker>(Fake("fallback")), TargetOptions{});
  absl::StatusOr<PartitionOutput> out = shardy.Partition(*m->module, 2);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->status, PartitionStatus::kUnsupported);
  EXPECT_THAT(out->message, HasSubstr("fell back to GSPMD"));
  // The same answer is fine for GSPMD.
  XlaPartitioner gspmd("xla", std::make_shared<XlaWorker>(Fake("fallback")), TargetOptions{});
  out = gspmd.Partition(*m->module, 2);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->status, PartitionStatus::kOk) << out->message;
}

}  // namespace
}  // namespace spmdcheck::target
