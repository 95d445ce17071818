#include "fuzz/background_cost_check.h"

#include <algorithm>
#include <chrono>
#include <utility>

namespace spmdcheck::fuzz {

BackgroundCostCheck::BackgroundCostCheck(CostCheck check, size_t max_pending)
    : check_(std::move(check)), max_pending_(std::max<size_t>(1, max_pending)) {
  thread_ = std::thread([this] { Run(); });
}

BackgroundCostCheck::~BackgroundCostCheck() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closing_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void BackgroundCostCheck::Run() {
  while (true) {
    CostCheckTask task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      changed_.wait(lock, [&] { return closing_ || done_ < queue_.size(); });
      if (closing_) return;
      // Only finished checks are ever taken out of the queue, so this slot stays put while the
      // check runs unlocked.
      task = std::move(queue_[done_].task);
    }
    const auto start = std::chrono::steady_clock::now();
    std::vector<CostFinding> cheaper =
        check_ ? check_(*task.partitioned, task.partitioned_text, task.global())
               : std::vector<CostFinding>{};
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    {
      std::lock_guard<std::mutex> lock(mu_);
      CostCheckResult& result = queue_[done_];
      result.task = std::move(task);
      result.cheaper = std::move(cheaper);
      result.seconds = seconds;
      ++done_;
    }
    changed_.notify_all();
  }
}

double BackgroundCostCheck::Submit(CostCheckTask task) {
  const auto start = std::chrono::steady_clock::now();
  {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait(lock, [&] { return queue_.size() - done_ < max_pending_; });
    CostCheckResult slot;
    slot.task = std::move(task);
    queue_.push_back(std::move(slot));
  }
  changed_.notify_all();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::vector<CostCheckResult> BackgroundCostCheck::TakeFinished() {
  std::vector<CostCheckResult> finished;
  std::lock_guard<std::mutex> lock(mu_);
  finished.reserve(done_);
  for (; done_ > 0; --done_) {
    finished.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  return finished;
}

std::vector<CostCheckResult> BackgroundCostCheck::Finish(const std::function<bool()>& cancelled) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    while (done_ < queue_.size() && !(cancelled && cancelled())) {
      changed_.wait_for(lock, std::chrono::milliseconds(50));
    }
  }
  return TakeFinished();
}

size_t BackgroundCostCheck::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size();
}

}  // namespace spmdcheck::fuzz
