// What the sender tells the rest of the program about each file: the seams the send manifest, the
// progress display, the hot folder and the metrics hang on, so that none of them reaches into the
// pipeline (docs/architecture.md, "The sender", shows where they sit).
//
// A FileSource is called by the reader thread (next()) and, for backlog(), by a transmit thread.
// A SendObserver is called by the transmit threads through the LaneHub, one call at a time, each
// event once however many lanes carry the session; it must be quick and must not throw. Sources
// and observers are the caller's and must outlive the session.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.hpp"
#include "common/hash.hpp"
#include "sender/source/file_list.hpp"

namespace ddft::sender {

struct FileMeta;

// What a source still holds: the files it will give, their bytes, and since when the oldest of
// them waits (on the source's clock; nothing when none waits or the source cannot tell).
struct Backlog {
  uint64_t files = 0;
  uint64_t bytes = 0;
  std::optional<common::Clock::time_point> oldest;
};

// Where the reader takes the files of a session from.
class FileSource {
 public:
  virtual ~FileSource() = default;
  // The next file to send. Blocks until one is ready; nothing when the session should end (no
  // more files, or `stop` requested). Called from the reader thread only.
  virtual std::optional<SourceFile> next(std::stop_token stop) = 0;
  // For the session's first log line: "3 file(s)", "the hot folder /srv/outbox".
  virtual std::string describe() const = 0;
  // The files waiting to be given by next() (a hot folder's queue), or nothing when the source
  // cannot tell (the default). Called from a transmit thread, about 10 times a second at most,
  // while next() runs on the reader thread: implementations must be thread-safe and quick.
  virtual std::optional<Backlog> backlog() const { return std::nullopt; }
};

// The files of a command line, in order.
class ListSource final : public FileSource {
 public:
  explicit ListSource(const std::vector<SourceFile>& files);
  std::optional<SourceFile> next(std::stop_token stop) override;
  std::string describe() const override;
  // The files not given yet and their listed bytes (since when: not told).
  std::optional<Backlog> backlog() const override;

 private:
  const std::vector<SourceFile>& files_;
  uint64_t total_bytes_ = 0;
  std::atomic<size_t> next_{0};
  std::atomic<uint64_t> given_bytes_{0};
};

// Callbacks from the transmit threads (one per lane), one at a time: never two at once.
// Implementations must be quick (every lane waits) and must not throw. Each file ends in exactly
// one of file_sent() / file_failed().
class SendObserver {
 public:
  virtual ~SendObserver() = default;
  virtual void session_started(uint64_t /*session_id*/) {}
  // The file's announce is on the wire (its first copy with --repeat).
  virtual void file_started(const FileMeta& /*file*/) {}
  // `sent` bytes of the file packetised so far (of every copy with --repeat: 0..size*copies).
  virtual void file_progress(const FileMeta& /*file*/, uint64_t /*sent*/) {}
  // Every copy of the file and its end are on the wire. `digest` is what the receiver will check
  // (empty with --verify none).
  virtual void file_sent(const FileMeta& /*file*/, const common::Digest& /*digest*/) {}
  // file_sent(), told which lane carried the file (`list_lane` as its file list entry says:
  // common::kLaneUnsaid with one lane, common::kLaneAll striped). The session calls this one;
  // by default it is file_sent().
  virtual void file_sent_via(const FileMeta& file, const common::Digest& digest,
                             int /*list_lane*/) {
    file_sent(file, digest);
  }
  // The file was not sent whole: it could not be opened or read, or the sender stopped. `file`
  // has file_id 0 when the file never got an announce.
  virtual void file_failed(const FileMeta& /*file*/, const std::string& /*reason*/) {}
  // Nothing to send for a heartbeat interval (a heartbeat went out): a chance to refresh what an
  // observer shows while no other callback comes.
  virtual void idle() {}
  // The session's final heartbeat is out (the sender is done).
  virtual void session_finished(uint64_t /*session_id*/) {}
};

// Passes every callback on to each of several observers, in the order they were added.
class ObserverList final : public SendObserver {
 public:
  void add(SendObserver* o) { observers_.push_back(o); }
  bool empty() const { return observers_.empty(); }
  void session_started(uint64_t id) override;
  void file_started(const FileMeta& f) override;
  void file_progress(const FileMeta& f, uint64_t sent) override;
  void file_sent(const FileMeta& f, const common::Digest& d) override;
  void file_sent_via(const FileMeta& f, const common::Digest& d, int list_lane) override;
  void file_failed(const FileMeta& f, const std::string& reason) override;
  void idle() override;
  void session_finished(uint64_t id) override;

 private:
  std::vector<SendObserver*> observers_;
};

// Passes on to `inner` the callbacks of channel `channel`'s files only, and every session
// callback: what one channel's hot folder hears of a session of several. `inner` must outlive it.
class ChannelObserver final : public SendObserver {
 public:
  ChannelObserver(std::string channel, SendObserver& inner)
      : channel_(std::move(channel)), inner_(inner) {}
  void session_started(uint64_t id) override { inner_.session_started(id); }
  void file_started(const FileMeta& f) override;
  void file_progress(const FileMeta& f, uint64_t sent) override;
  void file_sent(const FileMeta& f, const common::Digest& d) override;
  void file_sent_via(const FileMeta& f, const common::Digest& d, int list_lane) override;
  void file_failed(const FileMeta& f, const std::string& reason) override;
  void idle() override { inner_.idle(); }
  void session_finished(uint64_t id) override { inner_.session_finished(id); }

 private:
  std::string channel_;
  SendObserver& inner_;
};

}  // namespace ddft::sender
