#include "sender/source/resend_schedule.hpp"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include "common/json.hpp"
#include "sender/work_item.hpp"

namespace ddft::sender {

ResendSchedule::ResendSchedule(std::vector<std::chrono::seconds> delays, common::VerifyType verify,
                               common::Clock& clock)
    : delays_(std::move(delays)), verify_(verify), clock_(clock) {}

void ResendSchedule::session_started(uint64_t session_id) {
  std::lock_guard lock(mu_);
  session_ = session_id;
}

void ResendSchedule::file_sent_via(const FileMeta& file, const common::Digest& digest,
                                   int /*list_lane*/) {
  std::lock_guard lock(mu_);
  ++reported_;
  cv_.notify_all();
  if (file.resend_of || delays_.empty()) return;  // a resend is not resent again
  Entry e;
  e.of = {session_, file.file_id, file.rel_path, file.size, verify_, digest.hex()};
  e.path = file.src_path;
  e.mtime_ns = file.mtime_ns;
  e.sent = clock_.now();
  e.tag = file.tag;
  if (auto it = moved_early_.find(file.tag); it != moved_early_.end()) {
    e.path = it->second;
    moved_early_.erase(it);
  }
  if (e.tag != 0) by_tag_[e.tag] = e.sent + delays_[0];
  schedule_locked(std::move(e));
}

void ResendSchedule::file_failed(const FileMeta& /*file*/, const std::string& /*reason*/) {
  std::lock_guard lock(mu_);
  ++reported_;
  cv_.notify_all();
}

void ResendSchedule::schedule_locked(Entry e) {
  if (e.next >= delays_.size()) return;
  const auto when = e.sent + delays_[e.next];
  due_.emplace(when, std::move(e));
}

void ResendSchedule::moved(uint64_t tag, const std::string& path) {
  std::lock_guard lock(mu_);
  auto it = by_tag_.find(tag);
  if (it == by_tag_.end()) {
    moved_early_[tag] = path;
    return;
  }
  for (auto [d, end] = due_.equal_range(it->second); d != end; ++d) {
    if (d->second.tag == tag) d->second.path = path;
  }
  by_tag_.erase(it);
}

void ResendSchedule::handed_out() {
  std::lock_guard lock(mu_);
  ++handed_out_;
}

std::optional<SourceFile> ResendSchedule::due() {
  std::lock_guard lock(mu_);
  const auto now = clock_.now();
  while (!due_.empty() && due_.begin()->first <= now) {
    auto node = due_.extract(due_.begin());
    Entry& e = node.mapped();
    struct stat st {};
    const bool same =
        ::stat(e.path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        static_cast<uint64_t>(st.st_size) == e.of.size &&
        static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec == e.mtime_ns;
    if (!same) {
      spdlog::warn(
          "Warn: {} (session {:016x}, file {}): not resent (--resend-after): '{}' is gone or "
          "changed since it was sent",
          common::json_quote(e.of.path), e.of.session, e.of.file_id, e.path);
      continue;
    }
    SourceFile s;
    s.path = e.path;
    s.rel_path = e.of.path;
    s.size = e.of.size;
    s.resend_of = e.of;
    ++e.next;
    schedule_locked(std::move(e));
    return s;
  }
  return std::nullopt;
}

bool ResendSchedule::done() const {
  std::lock_guard lock(mu_);
  return due_.empty() && reported_ >= handed_out_;
}

void ResendSchedule::wait(std::chrono::milliseconds most, std::stop_token stop) {
  std::unique_lock lock(mu_);
  auto until = most;
  if (!due_.empty()) {
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(due_.begin()->first - clock_.now());
    until = std::max(std::chrono::milliseconds(0), std::min(until, left));
  }
  const uint64_t seen = reported_;
  cv_.wait_for(lock, until, [&] { return stop.stop_requested() || reported_ != seen; });
}

std::optional<SourceFile> ResendingSource::next(std::stop_token stop) {
  if (!inner_done_) {
    if (auto f = inner_.next(stop)) {
      schedule_.handed_out();
      return f;
    }
    inner_done_ = true;
  }
  while (!stop.stop_requested()) {
    if (auto r = schedule_.due()) return r;
    if (schedule_.done()) return std::nullopt;
    schedule_.wait(std::chrono::milliseconds(500), stop);
  }
  return std::nullopt;
}

}  // namespace ddft::sender
