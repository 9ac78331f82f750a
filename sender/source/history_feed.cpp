#include "sender/source/history_feed.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "common/clock.hpp"
#include "common/json.hpp"

namespace ddft::sender {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::nanoseconds;
using std::chrono::seconds;

// Payloads a lane may fall behind by before the oldest go (it then misses those repeats).
constexpr size_t kPayloadsKept = 1024;

int64_t ns_of(seconds s) { return std::chrono::duration_cast<nanoseconds>(s).count(); }

// What an entry costs the schedule in memory, about.
uint64_t item_bytes(const common::HistoryRecord& r) {
  return 128 + r.file.path.size() + r.file.digest.size();
}

// The entry bytes of `r` before compression.
size_t raw_bytes(const common::HistoryRecord& r) {
  return common::kHistoryEntryFixedSize + r.file.digest.size() / 2 + r.file.path.size();
}

}  // namespace

std::vector<seconds> default_history_repeats() {
  return {minutes(1), minutes(10), hours(1), hours(6), hours(24)};
}

HistoryFeed::HistoryFeed(uint64_t sender_id, std::vector<seconds> repeats, size_t max_payload,
                         uint64_t budget, uint64_t max_bytes, History::WallNs wall_ns)
    : sender_id_(sender_id),
      repeats_(std::move(repeats)),
      max_payload_(max_payload),
      budget_(budget),
      max_bytes_(max_bytes),
      wall_ns_(std::move(wall_ns)) {
  if (!wall_ns_) wall_ns_ = common::wall_clock_ns;
  refilled_ = wall_ns_();
  tokens_ = static_cast<double>(std::max<uint64_t>(budget_, max_payload_));
}

void HistoryFeed::add_earlier(const std::vector<HistoryEntry>& entries, int64_t sent_up_to) {
  const int64_t now = wall_ns_();
  std::lock_guard lock(mu_);
  for (const HistoryEntry& e : entries) {
    Item item{record_of(e), 0};
    const int64_t sent = item.record.sent_ns;
    // The first repeat an earlier run has not sent, and the last one due by now.
    while (item.next < repeats_.size() && sent + ns_of(repeats_[item.next]) <= sent_up_to) {
      ++item.next;
    }
    size_t due = item.next;
    while (due < repeats_.size() && sent + ns_of(repeats_[due]) <= now) ++due;
    if (item.next == repeats_.size()) continue;  // every repeat went out
    if (due > item.next) {
      // Missed while no run was sending: once now (as the last of them), then the repeats
      // still to come.
      item.next = due - 1;
      scheduled_bytes_ += item_bytes(item.record);
      schedule_.emplace(now, std::move(item));
      continue;
    }
    schedule_locked(std::move(item));
  }
}

void HistoryFeed::add(const HistoryEntry& e) {
  std::lock_guard lock(mu_);
  schedule_locked(Item{record_of(e), 0});
}

void HistoryFeed::schedule_locked(Item item) {
  if (item.next >= repeats_.size()) return;
  const int64_t due = item.record.sent_ns + ns_of(repeats_[item.next]);
  scheduled_bytes_ += item_bytes(item.record);
  schedule_.emplace(due, std::move(item));
  while (scheduled_bytes_ > max_bytes_ && !schedule_.empty()) {
    const auto last = std::prev(schedule_.end());
    scheduled_bytes_ -= item_bytes(last->second.record);
    if (!warned_) {
      warned_ = true;
      spdlog::warn(
          "Warn: the history's repeats on the wire are over --history-mb: the entries with the "
          "furthest repeat go first ({} the first)",
          common::json_quote(last->second.record.file.path));
    }
    schedule_.erase(last);
    ++totals_.dropped;
  }
}

void HistoryFeed::pack_locked(int64_t now, bool all) {
  while (!schedule_.empty() && schedule_.begin()->first <= now) {
    auto node = schedule_.extract(schedule_.begin());
    scheduled_bytes_ -= item_bytes(node.mapped().record);
    waiting_.emplace_back(node.key(), node.mapped().record);
    Item next = std::move(node.mapped());
    // A catch-up goes as the repeat it stands for: the next one follows the schedule.
    ++next.next;
    schedule_locked(std::move(next));
  }
  if (budget_ > 0) {
    const double cap = static_cast<double>(std::max<uint64_t>(budget_, max_payload_));
    tokens_ = std::min(
        cap, tokens_ + static_cast<double>(budget_) *
                           static_cast<double>(std::max<int64_t>(now - refilled_, 0)) / 1e9);
  }
  refilled_ = now;
  std::vector<common::HistoryRecord> batch;
  while (!waiting_.empty() && tokens_ > 0) {
    // Gather for a while unless there are enough to fill a payload.
    size_t raw = 0;
    for (const auto& w : waiting_) {
      raw += raw_bytes(w.second);
      if (raw >= 2 * max_payload_) break;
    }
    if (!all && raw < 2 * max_payload_ && now - waiting_.front().first < kGatherNs) break;
    batch.clear();
    for (const auto& w : waiting_) {
      batch.push_back(w.second);
      if (batch.size() == 0xFFFF) break;
    }
    size_t taken = 0;
    std::vector<uint8_t> payload = common::pack_history(sender_id_, batch, max_payload_, &taken);
    if (taken == 0) {
      spdlog::warn("Warn: {}: its history entry does not fit a datagram of this packet size",
                   common::json_quote(waiting_.front().second.file.path));
      taken = 1;
    } else {
      tokens_ -= static_cast<double>(payload.size());
      totals_.entries_sent += taken;
      totals_.bytes += payload.size();
      ++totals_.payloads;
      payloads_.push_back(std::make_shared<const std::vector<uint8_t>>(std::move(payload)));
    }
    waiting_.erase(waiting_.begin(), waiting_.begin() + static_cast<ptrdiff_t>(taken));
  }
  trim_payloads_locked();
}

void HistoryFeed::trim_payloads_locked() {
  uint64_t keep_from = first_payload_ + payloads_.size();
  for (uint64_t c : cursor_) keep_from = std::min(keep_from, c);
  if (payloads_.size() > kPayloadsKept) {
    keep_from = std::max<uint64_t>(keep_from, first_payload_ + payloads_.size() - kPayloadsKept);
  }
  if (keep_from <= first_payload_) return;
  payloads_.erase(payloads_.begin(),
                  payloads_.begin() + static_cast<ptrdiff_t>(keep_from - first_payload_));
  first_payload_ = keep_from;
}

void HistoryFeed::start_session(size_t lanes) {
  std::lock_guard lock(mu_);
  cursor_.assign(lanes, first_payload_ + payloads_.size());
}

std::vector<HistoryFeed::Payload> HistoryFeed::take(size_t lane, uint64_t* waiting, bool last) {
  const int64_t now = wall_ns_();
  std::lock_guard lock(mu_);
  if (lane >= cursor_.size() || cursor_[lane] == UINT64_MAX) return {};
  pack_locked(now, last);
  if (waiting != nullptr) *waiting = waiting_.size();
  std::vector<Payload> out;
  for (uint64_t n = std::max(cursor_[lane], first_payload_); n < first_payload_ + payloads_.size();
       ++n) {
    out.push_back(payloads_[n - first_payload_]);
  }
  cursor_[lane] = first_payload_ + payloads_.size();
  trim_payloads_locked();
  return out;
}

void HistoryFeed::lane_done(size_t lane) {
  std::lock_guard lock(mu_);
  if (lane < cursor_.size()) cursor_[lane] = UINT64_MAX;
  trim_payloads_locked();
}

int64_t HistoryFeed::sent_up_to() const {
  int64_t t = wall_ns_();
  std::lock_guard lock(mu_);
  if (!waiting_.empty()) t = std::min(t, waiting_.front().first - 1);
  if (!schedule_.empty()) t = std::min(t, schedule_.begin()->first - 1);
  return t;
}

HistoryFeed::Totals HistoryFeed::totals() const {
  std::lock_guard lock(mu_);
  Totals t = totals_;
  t.waiting = waiting_.size();
  t.scheduled = schedule_.size();
  return t;
}

}  // namespace ddft::sender
