// Whether the announce of a new file is taken: the receive filters (policy: logged and counted,
// no record), then its size against the bounds and the free space, its name, and the bound on
// files in flight, where the oldest file still receiving may have to give way. A refused file is
// counted and recorded here (within the failure records' budget).
//
// Writer thread only. It reads the files in flight and never changes one: the file table fails
// the file it names to make room. The configuration, folder, records, counters, known ids and
// files are the caller's and must outlive it. Nothing here throws.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "common/protocol.hpp"
#include "receiver/assembly/failure_records.hpp"
#include "receiver/assembly/file.hpp"
#include "receiver/assembly/known_files.hpp"
#include "receiver/config.hpp"
#include "receiver/counters.hpp"
#include "receiver/delivery/output_dir.hpp"

namespace ddft::receiver {

class Admission {
 public:
  // References must outlive this.
  Admission(const ReceiverConfig& cfg, OutputDir& out, FailureRecords& records,
            AssemblerCounters& counters, SessionFiles& session_files, KnownFiles& known,
            const FilesInFlight& files);
  Admission(const Admission&) = delete;
  Admission& operator=(const Admission&) = delete;

  // True when the receive filters drop `f` (logged, counted, its id remembered as filtered).
  // They apply to acceptable names only: a hostile name is refused as such, whatever the
  // patterns say.
  [[nodiscard]] bool filtered(const File& f);
  // Why the announce `a` of `f` is refused (its size, the free space, its name, no room), or
  // nullopt when it is taken. Taking it may cost the oldest file still receiving its place:
  // then *evict is that file (counted as evicted), which the caller fails with evict_reason()
  // before taking `f`; else null.
  [[nodiscard]] std::optional<std::string> refusal(const common::Announce& a, const File& f,
                                                   File** evict);
  // Why the file refusal() named in *evict fails.
  std::string evict_reason() const;
  // `f` is refused for `reason`: counted, logged, and recorded in the failed folder.
  void refuse(const File& f, const std::string& reason);

 private:
  // Makes room for one more file in flight. False, with *why set, when the bound on files in
  // flight leaves none; *evict as for refusal().
  [[nodiscard]] bool make_room(std::string* why, File** evict);

  const ReceiverConfig& cfg_;
  OutputDir& out_;
  FailureRecords& records_;
  AssemblerCounters& counters_;
  SessionFiles& session_files_;
  KnownFiles& known_;
  const FilesInFlight& files_;
  size_t files_bound_;  // files in flight at most, whatever their state (make_room())
};

}  // namespace ddft::receiver
