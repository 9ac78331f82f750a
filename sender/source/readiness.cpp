#include "sender/source/readiness.hpp"

#include <algorithm>

namespace ddft::sender {

ReadinessTracker::ReadinessTracker(duration settle)
    : settle_(settle), recheck_(std::max<duration>(settle, kMinRecheck)) {}

ReadinessTracker::Entry& ReadinessTracker::entry(const std::string& rel, time_point now) {
  auto [it, inserted] = entries_.try_emplace(rel);
  if (inserted) it->second.stable_since = it->second.queued_since = now;
  return it->second;
}

void ReadinessTracker::schedule(const std::string& rel, Entry& e, time_point at) {
  if (e.check_at != kNever) due_.erase({e.check_at, rel});
  e.check_at = at;
  if (at != kNever) due_.insert({at, rel});
}

void ReadinessTracker::erase(const std::string& rel) {
  auto it = entries_.find(rel);
  if (it == entries_.end()) return;
  if (it->second.check_at != kNever) due_.erase({it->second.check_at, rel});
  entries_.erase(it);  // a stale name left in ready_ is skipped by take_ready()
}

void ReadinessTracker::wake(const std::string& /*rel*/, Entry& e, time_point now) {
  if (e.state == State::kHeld) e.queued_since = now;
  if (e.state == State::kReady || e.state == State::kHeld) e.state = State::kWaiting;
  e.stable_since = now;
  // The event explains any change so far: the next probe's identity is the one the settle time
  // compares with, and writes after it come as events too.
  e.last.reset();
}

void ReadinessTracker::created(const std::string& rel, time_point now) {
  Entry& e = entry(rel, now);
  if (e.state == State::kInFlight) {
    e.changed = true;
    e.complete = false;
    return;
  }
  wake(rel, e, now);
  e.complete = false;
  // Probed at once: the probe may know that no writer has it open (a hard link made into the
  // folder gets no close event).
  schedule(rel, e, now);
}

void ReadinessTracker::closed(const std::string& rel, time_point now) {
  Entry& e = entry(rel, now);
  e.complete = true;
  if (e.state == State::kInFlight) {
    e.changed = true;
    return;
  }
  wake(rel, e, now);
  schedule(rel, e, now);  // the first probe takes the identity the settle time compares with
}

void ReadinessTracker::modified(const std::string& rel, time_point now) {
  Entry& e = entry(rel, now);
  e.complete = false;
  if (e.state == State::kInFlight) {
    e.changed = true;
    return;
  }
  wake(rel, e, now);
  // Nothing to probe until the writer closes it: its close (or a rescan) schedules the next.
  schedule(rel, e, kNever);
}

void ReadinessTracker::attrib(const std::string& rel, time_point now) {
  auto it = entries_.find(rel);
  if (it == entries_.end()) return;
  Entry& e = it->second;
  switch (e.state) {
    case State::kInFlight:
      return;  // a changed mtime shows in the identity checked after sending
    case State::kHeld:
      if (!e.rearm_on_attrib) return;
      e.complete = true;  // it was complete when it was handed out
      break;
    case State::kReady:
    case State::kWaiting:
      if (!e.complete) {
        e.stable_since = now;
        return;  // still waiting for its close
      }
      break;
  }
  wake(rel, e, now);
  schedule(rel, e, now);
}

void ReadinessTracker::found(const std::string& rel, time_point now) {
  Entry& e = entry(rel, now);
  e.seen = true;
  switch (e.state) {
    case State::kReady:
    case State::kInFlight:
      return;
    case State::kHeld:
      schedule(rel, e, now);  // the probe tells whether it changed meanwhile
      return;
    case State::kWaiting:
      // Complete already and probed: probed again now, and only a change restarts its settle
      // time. A scan alone must not (they come every few seconds on a network filesystem), or
      // a file would never settle with scans more frequent than --settle.
      if (e.complete && e.last) {
        schedule(rel, e, now);
        return;
      }
      // Found by a scan, its events (if any) unknown: complete once unchanged for the settle
      // time from now.
      e.complete = true;
      e.stable_since = now;
      e.last.reset();
      schedule(rel, e, now);
      return;
  }
}

void ReadinessTracker::gone(const std::string& rel) {
  auto it = entries_.find(rel);
  if (it == entries_.end()) return;
  if (it->second.state == State::kInFlight) {
    it->second.changed = true;  // whatever is at that path after sending is not what was sent
    return;
  }
  erase(rel);
}

void ReadinessTracker::gone_under(const std::string& folder) {
  const std::string prefix = folder + "/";
  std::vector<std::string> names;
  for (auto it = entries_.lower_bound(prefix);
       it != entries_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
    names.push_back(it->first);
  }
  for (const auto& n : names) gone(n);
}

void ReadinessTracker::rescan_begin() {
  for (auto& [rel, e] : entries_) e.seen = false;
}

void ReadinessTracker::rescan_end() {
  std::vector<std::string> lost;
  for (auto& [rel, e] : entries_) {
    if (!e.seen && e.state != State::kInFlight) lost.push_back(rel);
    e.seen = true;
  }
  for (const auto& n : lost) erase(n);
}

void ReadinessTracker::evaluate(const std::string& rel, Entry& e, time_point now,
                                const ProbeFn& probe) {
  const std::optional<FileProbe> p = probe(rel);
  if (!p) {
    erase(rel);
    return;
  }
  if (e.state == State::kHeld) {
    if (e.last && p->id == *e.last) return;  // the version that failed (or was kept): stays held
    e.state = State::kWaiting;
    e.complete = true;
    e.stable_since = e.queued_since = now;
    e.last = p->id;
    schedule(rel, e, now + settle_);
    return;
  }
  // A change no event told of (a lost event, a network filesystem) restarts the settle time.
  if (e.last && p->id != *e.last) e.stable_since = now;
  e.last = p->id;
  if (p->writer == FileProbe::Writer::kOpen) {
    schedule(rel, e, now + recheck_);
    return;
  }
  if (!e.complete && p->writer != FileProbe::Writer::kNone) return;  // wait for its close
  if (now - e.stable_since < settle_) {
    schedule(rel, e, e.stable_since + settle_);
    return;
  }
  e.state = State::kReady;
  ready_.push_back(rel);
}

std::optional<ReadinessTracker::Ready> ReadinessTracker::take_ready(time_point now,
                                                                    const ProbeFn& probe) {
  while (!due_.empty() && due_.begin()->first <= now) {
    const std::string rel = due_.begin()->second;
    due_.erase(due_.begin());
    auto it = entries_.find(rel);
    if (it == entries_.end()) continue;
    it->second.check_at = kNever;
    evaluate(rel, it->second, now, probe);
  }
  while (!ready_.empty()) {
    const std::string rel = std::move(ready_.front());
    ready_.pop_front();
    auto it = entries_.find(rel);
    if (it == entries_.end() || it->second.state != State::kReady) continue;
    it->second.state = State::kInFlight;
    it->second.changed = false;
    return Ready{rel, *it->second.last};
  }
  return std::nullopt;
}

void ReadinessTracker::finished(const std::string& rel) { erase(rel); }

void ReadinessTracker::hold(const std::string& rel, const FileIdentity& id, time_point now,
                            bool rearm_on_attrib) {
  auto it = entries_.find(rel);
  if (it == entries_.end()) return;
  Entry& e = it->second;
  if (e.changed) {
    // Written to, replaced or removed while it was sent: a new version, judged afresh.
    e.changed = false;
    e.state = State::kWaiting;
    e.stable_since = e.queued_since = now;
    e.last.reset();
    schedule(rel, e, e.complete ? now : kNever);
    return;
  }
  e.state = State::kHeld;
  e.last = id;
  e.rearm_on_attrib = rearm_on_attrib;
  schedule(rel, e, kNever);
}

void ReadinessTracker::requeue(const std::string& rel, time_point now) {
  auto it = entries_.find(rel);
  if (it == entries_.end()) return;
  Entry& e = it->second;
  e.changed = false;
  e.state = State::kWaiting;
  e.stable_since = e.queued_since = now;
  e.last.reset();
  schedule(rel, e, e.complete ? now : kNever);
}

bool ReadinessTracker::changed_in_flight(const std::string& rel) const {
  auto it = entries_.find(rel);
  return it != entries_.end() && it->second.changed;
}

void ReadinessTracker::folder_emptied(const std::string& folder, time_point now) {
  folders_[folder] = now + settle_;
}

void ReadinessTracker::folder_activity(const std::string& folder, time_point now) {
  auto it = folders_.find(folder);
  if (it != folders_.end()) it->second = now + settle_;
}

std::vector<std::string> ReadinessTracker::take_due_folders(time_point now) {
  std::vector<std::string> due;
  for (auto it = folders_.begin(); it != folders_.end();) {
    if (it->second <= now) {
      due.push_back(it->first);
      it = folders_.erase(it);
    } else {
      ++it;
    }
  }
  // Deepest first: removing "a/b" may empty "a".
  std::sort(due.begin(), due.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  return due;
}

std::optional<ReadinessTracker::time_point> ReadinessTracker::next_deadline() const {
  std::optional<time_point> t;
  if (!ready_.empty()) return time_point::min();
  if (!due_.empty()) t = due_.begin()->first;
  for (const auto& [f, at] : folders_) {
    if (!t || at < *t) t = at;
  }
  return t;
}

ReadinessTracker::Queue ReadinessTracker::queued() const {
  Queue q;
  for (const auto& [rel, e] : entries_) {
    if (e.state != State::kWaiting && e.state != State::kReady) continue;
    ++q.files;
    if (e.last) q.bytes += e.last->size;
    if (!q.oldest || e.queued_since < *q.oldest) q.oldest = e.queued_since;
  }
  return q;
}

}  // namespace ddft::sender
