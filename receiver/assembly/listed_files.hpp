// The files the sender names that this receiver never heard of. Its file list (kFileList) names
// each file a lane finished: one never heard of is recorded as failed at once when the list came
// down that very lane (the sender lists a file only after its end there); else the entry is held
// until that lane is gone (its final heartbeat, or silence), and recorded only if the file still
// has not come. The sender's history names files too (receiver/assembly/sender_history.hpp),
// recorded through record_unheard(): each such file is handled as its announce would have been
// (refused, filtered, or recorded as failed).
//
// Writer thread only. It owns the held entries (at most kHeldMax: past it, the oldest is settled
// at once); the configuration, folder, records, clock, counters, known ids, files in flight and
// gate are the caller's and must outlive it. A malformed list is counted, never thrown.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "common/clock.hpp"
#include "common/protocol.hpp"
#include "receiver/assembly/failure_records.hpp"
#include "receiver/assembly/file.hpp"
#include "receiver/assembly/known_files.hpp"
#include "receiver/config.hpp"
#include "receiver/counters.hpp"
#include "receiver/delivery/output_dir.hpp"
#include "receiver/link/sender_session.hpp"

namespace ddft::receiver {

class ListedFiles {
 public:
  // List entries held at most (a session's complete list names at most 100,000 files).
  static constexpr size_t kHeldMax = 100'000;

  // References must outlive this.
  ListedFiles(const ReceiverConfig& cfg, OutputDir& out, FailureRecords& records,
              common::Clock& clock, AssemblerCounters& counters, SessionFiles& session_files,
              KnownFiles& known, const FilesInFlight& files);
  ListedFiles(const ListedFiles&) = delete;
  ListedFiles& operator=(const ListedFiles&) = delete;

  // The gate that says how the session's lanes stand (null: one lane, and an entry held for
  // another is settled at the next release()).
  void set_gate(const SenderSession* gate) { gate_ = gate; }

  // A file list of the current session, come down receiver lane `lane`.
  void handle(const common::Packet& p, size_t lane);
  // Whether an entry for file `id` of the session waits for its lane.
  bool holds(uint32_t id) const { return held_.count(id) != 0; }
  // True while entries wait for their lane (the session is not over before they are settled).
  bool holds_any() const { return !held_.empty(); }
  // File `id` of the session was announced: an entry held for it is dropped.
  void drop(uint32_t id) { held_.erase(id); }
  // Settles the held entries whose lane is gone at `now`: each file still not heard of is
  // recorded, or left to the receiver of its lane. `ended`: the session is over ("the session
  // ended ...", "the receiver stopped ..."), so every lane is taken as gone; null while it goes
  // on.
  void release(common::Clock::time_point now, const char* ended = nullptr);
  // The current session is over while the gate still knows its lanes: every held entry is
  // settled now, under that session (see FileTable::end_session()).
  void end_session(bool receiver_stopping);

  // A file this receiver never heard of, named by the sender's `named_by` ("file list",
  // "history"): refused when its name would have been, left out when the filter would have
  // dropped it, else recorded as failed with `rec` (its lane, of this session's, from
  // `sender_lane`). True when recorded as failed.
  bool record_unheard(FailureRecord rec, int sender_lane, const char* named_by);

 private:
  // Whether file `id` of the session is in flight, seen or filtered.
  bool heard_of(uint32_t id) const;
  void hold(const common::FileListEntry& e);
  // Why a held entry's file is recorded now, or nothing while its lane may still bring it.
  // *drop: it belongs to another receiver's lane (nothing to record).
  std::optional<std::string> held_due(int sender_lane, common::Clock::time_point now,
                                      const char* ended, bool* drop) const;
  // A listed file this receiver never heard of: recorded as failed, named; `lane_note` ends
  // its reason.
  void record_unannounced(const common::FileListEntry& e, const std::string& lane_note = {});
  // Why a listed file never heard of was never announced here, when the receiver can tell that
  // it was sent before the receiver's first packet of the session; nullopt when it cannot.
  std::optional<std::string> sent_before_joining(const common::FileListEntry& e) const;

  const ReceiverConfig& cfg_;
  OutputDir& out_;
  FailureRecords& records_;
  common::Clock& clock_;
  AssemblerCounters& counters_;
  SessionFiles& session_files_;
  KnownFiles& known_;
  const FilesInFlight& files_;
  const SenderSession* gate_ = nullptr;
  // Held entries of files not heard of, by file id.
  struct HeldEntry {
    common::FileListEntry entry;  // its path points into `path`
    std::string path;
  };
  std::map<uint32_t, std::unique_ptr<HeldEntry>> held_;
};

}  // namespace ddft::receiver
