// The lint's intermediate-sharding search asks a planner (partitioner/planner.h), not the
// reference partitioner: a planner that stands in sees every question and decides the answer.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/hlo_parser.h"
#include "lint/search.h"
#include "partitioner/planner.h"

namespace spmdcheck::lint {
namespace {

// Delegates to the reference planner and counts the questions; `refuse_reshards` makes every
// resharding impossible.
class CountingPlanner : public partitioner::Planner {
 public:
  explicit CountingPlanner(bool refuse_reshards) : refuse_reshards_(refuse_reshards) {}
  absl::StatusOr<std::unique_ptr<HloModule>> Partition(const HloModule& global,
                                                       int64_t num_partitions) const override {
    ++partitions;
    return partitioner::ReferencePlanner().Partition(global, num_partitions);
  }
  absl::StatusOr<int64_t> ReshardScore(const Shape& shape, const HloSharding& from,
                                       const HloSharding& to, int64_t num_partitions,
                                       const analysis::DomainWeights* weights) const override {
    ++reshards;
    if (refuse_reshards_) return absl::UnimplementedError("no plan");
    return partitioner::ReferencePlanner().ReshardScore(shape, from, to, num_partitions, weights);
  }
  mutable int64_t partitions = 0;
  mutable int64_t reshards = 0;

 private:
  bool refuse_reshards_;
};

// copy(input) on 4 devices, from rows to columns: the search must reshard somewhere.
GlobalChain CopyChain() {
  GlobalChain chain;
  GlobalValue input;
  input.name = "p";
  input.shape = *ParseShape("f32[8,8]");
  chain.values.push_back(input);
  GlobalValue copy;
  copy.name = "n";
  copy.shape = input.shape;
  copy.op.emplace(HloOpcode::kCopy, copy.name, copy.shape);
  chain.values.push_back(std::move(copy));
  chain.text = "n = copy(p)";
  return chain;
}

TEST(LintPlanner, TheSearchAsksThePlannerItIsGiven) {
  const GlobalChain chain = CopyChain();
  const HloSharding rows = *ParseSharding("{devices=[4,1]<=[4]}");
  const HloSharding columns = *ParseSharding("{devices=[1,4]<=[4]}");
  const std::vector<int64_t> mesh = {4};
  absl::StatusOr<SearchResult> reference = SearchShardings(chain, rows, columns, mesh, 4, nullptr);
  ASSERT_TRUE(reference.ok()) << reference.status();

  CountingPlanner counting(/*refuse_reshards=*/false);
  absl::StatusOr<SearchResult> asked =
      SearchShardings(chain, rows, columns, mesh, 4, nullptr, counting);
  ASSERT_TRUE(asked.ok()) << asked.status();
  EXPECT_GT(counting.reshards, 0);
  EXPECT_EQ(counting.partitions, 1);  // The chosen assignment, partitioned once.
  EXPECT_EQ(asked->cost.Score(), reference->cost.Score());
  ASSERT_EQ(asked->shardings.size(), reference->shardings.size());
  for (size_t i = 0; i < asked->shardings.size(); ++i) {
    EXPECT_EQ(asked->shardings[i], reference->shardings[i]) << i;
  }

  // A planner without any resharding leaves the search no way from rows to columns.
  CountingPlanner refusing(/*refuse_reshards=*/true);
  absl::StatusOr<SearchResult> none =
      SearchShardings(chain, rows, columns, mesh, 4, nullptr, refusing);
  EXPECT_GT(refusing.reshards, 0);
  EXPECT_FALSE(none.ok());
}

}  // namespace
}  // namespace spmdcheck::lint
