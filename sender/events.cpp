#include "sender/events.hpp"

#include "sender/work_item.hpp"

namespace ddft::sender {

ListSource::ListSource(const std::vector<SourceFile>& files) : files_(files) {
  for (const SourceFile& f : files_) total_bytes_ += f.size;
}

std::optional<SourceFile> ListSource::next(std::stop_token stop) {
  const size_t i = next_.load(std::memory_order_relaxed);
  if (stop.stop_requested() || i >= files_.size()) return std::nullopt;
  given_bytes_.fetch_add(files_[i].size, std::memory_order_relaxed);
  next_.store(i + 1, std::memory_order_relaxed);
  return files_[i];
}

std::optional<Backlog> ListSource::backlog() const {
  const size_t given = next_.load(std::memory_order_relaxed);
  const uint64_t bytes = given_bytes_.load(std::memory_order_relaxed);
  return Backlog{files_.size() - std::min(given, files_.size()),
                 total_bytes_ - std::min(bytes, total_bytes_), std::nullopt};
}

std::string ListSource::describe() const { return std::to_string(files_.size()) + " file(s)"; }

void ObserverList::session_started(uint64_t id) {
  for (auto* o : observers_) o->session_started(id);
}
void ObserverList::file_started(const FileMeta& f) {
  for (auto* o : observers_) o->file_started(f);
}
void ObserverList::file_progress(const FileMeta& f, uint64_t sent) {
  for (auto* o : observers_) o->file_progress(f, sent);
}
void ObserverList::file_sent(const FileMeta& f, const common::Digest& d) {
  for (auto* o : observers_) o->file_sent(f, d);
}
void ObserverList::file_sent_via(const FileMeta& f, const common::Digest& d, int list_lane) {
  for (auto* o : observers_) o->file_sent_via(f, d, list_lane);
}
void ObserverList::file_failed(const FileMeta& f, const std::string& reason) {
  for (auto* o : observers_) o->file_failed(f, reason);
}
void ObserverList::idle() {
  for (auto* o : observers_) o->idle();
}
void ObserverList::session_finished(uint64_t id) {
  for (auto* o : observers_) o->session_finished(id);
}

void ChannelObserver::file_started(const FileMeta& f) {
  if (f.channel == channel_) inner_.file_started(f);
}

void ChannelObserver::file_progress(const FileMeta& f, uint64_t sent) {
  if (f.channel == channel_) inner_.file_progress(f, sent);
}

void ChannelObserver::file_sent(const FileMeta& f, const common::Digest& d) {
  if (f.channel == channel_) inner_.file_sent(f, d);
}

void ChannelObserver::file_sent_via(const FileMeta& f, const common::Digest& d, int list_lane) {
  if (f.channel == channel_) inner_.file_sent_via(f, d, list_lane);
}

void ChannelObserver::file_failed(const FileMeta& f, const std::string& reason) {
  if (f.channel == channel_) inner_.file_failed(f, reason);
}

}  // namespace ddft::sender
