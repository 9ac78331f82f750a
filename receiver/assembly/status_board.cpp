#include "receiver/assembly/status_board.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/fd.hpp"
#include "common/json.hpp"
#include "common/log_format.hpp"

namespace ddft::receiver {
namespace {

using std::chrono::seconds;

constexpr size_t kMaxSenders = 64;

std::string percent_free(uint64_t free, uint64_t size) {
  return fmt::format("{:.1f}% free ({} of {} bytes)",
                     100.0 * static_cast<double>(free) / static_cast<double>(size),
                     common::with_commas(free), common::with_commas(size));
}

// "1, 3" of the lanes below `lanes` not in `up`.
std::string lanes_down(uint64_t up, size_t lanes) {
  std::string out;
  for (size_t k = 0; k < lanes && k < 64; ++k) {
    if ((up >> k) & 1) continue;
    if (!out.empty()) out += ", ";
    out += std::to_string(k);
  }
  return out;
}

uint64_t all_lanes(size_t lanes) { return lanes >= 64 ? ~uint64_t{0} : (uint64_t{1} << lanes) - 1; }

seconds interval_of(const common::SenderStatus& s) {
  return seconds(s.interval_s == 0 ? common::kStatusIntervalS : s.interval_s);
}

}  // namespace

StatusBoard::StatusBoard(common::Clock& clock, std::string json_path, WallNs wall_ns)
    : clock_(clock), json_path_(std::move(json_path)), wall_ns_(std::move(wall_ns)) {
  if (!wall_ns_) {
    wall_ns_ = [] {
      return std::chrono::duration_cast<std::chrono::nanoseconds>(
                 std::chrono::system_clock::now().time_since_epoch())
          .count();
    };
  }
}

void StatusBoard::take(const std::string& sender, uint64_t session, size_t lanes,
                       const common::SenderStatus& status) {
  const auto now = clock_.now();
  std::lock_guard lock(mu_);
  auto it = senders_.find(sender);
  if (it != senders_.end() && it->second.view.session == session &&
      status.seq <= it->second.view.status.seq) {
    return;  // a copy, or an older status of the session
  }
  Entry e;
  e.view = {sender, session, lanes, status, wall_ns_(), false};
  e.at = now;
  e.alarms = common::status_alarms(status);
  if (it == senders_.end()) {
    evict_if_full();
    log_changes(nullptr, e, now);
    senders_.emplace(sender, std::move(e));
  } else {
    log_changes(&it->second, e, now);
    it->second = std::move(e);
  }
  write_json();
}

void StatusBoard::log_changes(const Entry* was, Entry& e, common::Clock::time_point now) const {
  const std::string& who = e.view.sender;
  const common::SenderStatus& s = e.view.status;
  const common::StatusAlarms none;
  const common::StatusAlarms& before = was ? was->alarms : none;
  if (was && was->view.missing) {
    spdlog::info("Info: sender {}: its status comes again, after {} s", who,
                 std::chrono::duration_cast<seconds>(now - was->at).count());
  }
  if (e.alarms.backlog != before.backlog) {
    if (e.alarms.backlog) {
      spdlog::warn(
          "Warn: sender {}: the low side is backing up: {} file(s) ({} bytes) waiting, the "
          "oldest for {} s",
          who, s.queued_files, common::with_commas(s.queued_bytes), s.oldest_wait_s);
    } else {
      spdlog::info(
          "Info: sender {}: the low side's backlog has drained: {} file(s) waiting, the oldest "
          "for {} s",
          who, s.queued_files, s.oldest_wait_s);
    }
  }
  const auto fs_line = [&](bool on, bool off_before, const char* what, uint64_t free,
                           uint64_t size) {
    if (on == off_before) return;
    if (on) {
      spdlog::warn("Warn: sender {}: the file system of its {} is filling: {}", who, what,
                   percent_free(free, size));
    } else if (size > 0) {
      spdlog::info("Info: sender {}: the file system of its {} has room again: {}", who, what,
                   percent_free(free, size));
    }
  };
  fs_line(e.alarms.watch_low, before.watch_low, "watched folder", s.watch_free, s.watch_size);
  fs_line(e.alarms.retention_low, before.retention_low, "retention folder", s.retention_free,
          s.retention_size);
  if (e.alarms.retention_full != before.retention_full) {
    if (e.alarms.retention_full) {
      spdlog::warn(
          "Warn: sender {}: its retention folder holds {} bytes, over its limit of {} (files too "
          "young to be pruned)",
          who, common::with_commas(s.retention_bytes), common::with_commas(s.retention_limit));
    } else {
      spdlog::info("Info: sender {}: its retention folder is within its limit again", who);
    }
  }
  // Read failures: a new session starts its count from 0.
  const bool same = was && was->view.session == e.view.session;
  const uint64_t earlier = same ? was->view.status.read_failures : 0;
  e.unreadable = was && was->unreadable;
  e.last_unreadable = was ? was->last_unreadable : common::Clock::time_point{};
  if (s.read_failures > earlier) {
    spdlog::warn(
        "Warn: sender {}: {} file(s) it could not read since its last status ({} since it "
        "started)",
        who, s.read_failures - earlier, s.read_failures);
    e.unreadable = true;
    e.last_unreadable = now;
  } else if (e.unreadable && now - e.last_unreadable >= kReadQuietS) {
    spdlog::info("Info: sender {}: no file it could not read for {} s ({} since it started)", who,
                 kReadQuietS.count(), s.read_failures);
    e.unreadable = false;
  }
  const uint64_t all = all_lanes(e.view.lanes);
  const uint64_t up = s.lanes_up & all;
  const uint64_t up_before = was ? was->view.status.lanes_up & all_lanes(was->view.lanes) : all;
  const size_t lanes_before = was ? was->view.lanes : e.view.lanes;
  if (up != up_before || e.view.lanes != lanes_before) {
    if (up != all) {
      spdlog::warn("Warn: sender {}: lane(s) {} down, {} of its {} lanes up", who,
                   lanes_down(up, e.view.lanes), std::popcount(up), e.view.lanes);
    } else if (was) {
      spdlog::info("Info: sender {}: all its {} lane(s) up", who, e.view.lanes);
    }
  }
}

void StatusBoard::ended(uint64_t session) {
  std::lock_guard lock(mu_);
  const size_t before = senders_.size();
  std::erase_if(senders_, [session](const auto& kv) { return kv.second.view.session == session; });
  if (senders_.size() != before) write_json();
}

void StatusBoard::poll(common::Clock::time_point now) {
  std::lock_guard lock(mu_);
  bool changed = false;
  for (auto& [name, e] : senders_) {
    const auto late = now - e.at;
    if (e.view.missing || late <= kMissingIntervals * interval_of(e.view.status)) continue;
    e.view.missing = true;
    changed = true;
    spdlog::warn("Warn: sender {}: no status for {} s ({} intervals of {} s)", name,
                 std::chrono::duration_cast<seconds>(late).count(), kMissingIntervals,
                 interval_of(e.view.status).count());
  }
  if (changed) write_json();
}

std::vector<SenderStatusView> StatusBoard::snapshot() const {
  std::lock_guard lock(mu_);
  std::vector<SenderStatusView> out;
  out.reserve(senders_.size());
  for (const auto& [name, e] : senders_) out.push_back(e.view);
  return out;
}

void StatusBoard::evict_if_full() {
  if (senders_.size() < kMaxSenders) return;
  auto oldest = senders_.begin();
  for (auto it = senders_.begin(); it != senders_.end(); ++it) {
    if (it->second.at < oldest->second.at) oldest = it;
  }
  senders_.erase(oldest);
}

void StatusBoard::write_json() const {
  if (json_path_.empty()) return;
  std::string out = "{\"senders\": [";
  bool first = true;
  for (const auto& [name, e] : senders_) {
    const common::SenderStatus& s = e.view.status;
    const common::StatusAlarms& a = e.alarms;
    std::string channels;
    for (const common::SenderStatusChannel& c : s.channels) {
      channels += fmt::format(
          "{}{{\"name\": {}, \"queued_files\": {}, \"queued_bytes\": {}, \"oldest_waiting_s\": "
          "{}}}",
          channels.empty() ? "" : ", ", common::json_quote(c.name), c.queued_files, c.queued_bytes,
          c.oldest_wait_s);
    }
    std::string alarms;
    const auto alarm = [&](bool on, const char* what) {
      if (on) alarms += fmt::format("{}\"{}\"", alarms.empty() ? "" : ", ", what);
    };
    alarm(a.backlog, "backlog");
    alarm(e.unreadable, "unreadable_files");
    alarm(a.watch_low || a.retention_low, "disk_filling");
    alarm(a.retention_full, "retention_over_limit");
    alarm((s.lanes_up & all_lanes(e.view.lanes)) != all_lanes(e.view.lanes), "lane_down");
    alarm(e.view.missing, "status_missing");
    const auto received = std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::nanoseconds(e.view.received_wall_ns)));
    out += fmt::format(
        "{}\n  {{\"sender\": {}, \"session\": \"{:016x}\", \"version\": {}, \"received\": \"{}\", "
        "\"interval_s\": {}, \"alarms\": [{}],\n   \"queued_files\": {}, \"queued_bytes\": {}, "
        "\"oldest_waiting_s\": {}, \"read_failures\": {}, \"files_refused\": {},\n   "
        "\"retention_bytes\": {}, \"retention_limit_bytes\": {}, \"watch_fs_free_bytes\": {}, "
        "\"watch_fs_size_bytes\": {}, \"retention_fs_free_bytes\": {}, "
        "\"retention_fs_size_bytes\": {},\n   \"lanes\": {}, \"lanes_down\": [{}], "
        "\"rate_limit_bytes_per_s\": {}, \"hot_folder\": {}, \"channels\": [{}]}}",
        first ? "" : ",", common::json_quote(name), e.view.session, common::json_quote(s.version),
        common::iso8601_local(received), interval_of(s).count(), alarms, s.queued_files,
        s.queued_bytes, s.oldest_wait_s, s.read_failures, s.files_refused, s.retention_bytes,
        s.retention_limit, s.watch_free, s.watch_size, s.retention_free, s.retention_size,
        e.view.lanes, lanes_down(s.lanes_up, e.view.lanes), s.rate_limit,
        s.hot_folder ? "true" : "false", channels);
    first = false;
  }
  out += "\n]}\n";
  const std::string tmp = json_path_ + ".new";
  common::UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  // Not synced: operators' view of the last statuses, rewritten every few seconds from the
  // writer thread, which must not wait for the disk.
  const bool ok =
      fd && common::write_all(fd.get(), out) && std::rename(tmp.c_str(), json_path_.c_str()) == 0;
  if (!ok && !json_error_logged_) {
    json_error_logged_ = true;
    spdlog::error("Error: cannot write the senders' status to {}: {}",
                  common::json_quote(json_path_), std::strerror(errno));
  }
}

}  // namespace ddft::receiver
