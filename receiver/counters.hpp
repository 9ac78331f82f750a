// The receive core's counters: what the assembler's units count and the metrics and the log
// report. Plain values, written by the writer thread and copied out by Receiver::publish().
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "common/protocol.hpp"
#include "receiver/seq_window.hpp"

namespace ddft::receiver {

// Counts packets by sequence number the way a diode's hardware counter does: every number that
// never arrived is a lost packet. Duplicates within a window of recent numbers are not counted.
class SeqCounter {
 public:
  void reset();
  // Records `seq`; returns false when it is a duplicate.
  bool record(uint64_t seq);
  uint64_t received() const { return received_; }
  // Numbers between the first and the highest seen that have not arrived.
  uint64_t lost() const;

 private:
  using Window = SeqWindow<4096>;
  Window window_;
  uint64_t first_ = 0;  // the lowest number taken
  uint64_t received_ = 0;
};

// Average and peak of time samples over a reporting interval (DR and FW of the Rcvd: line).
struct IntervalStat {
  uint64_t sum_ns = 0;
  uint64_t max_ns = 0;
  uint64_t count = 0;
  void add(uint64_t ns) {
    sum_ns += ns;
    count += 1;
    if (ns > max_ns) max_ns = ns;
  }
  // "2.19/880": average ms with two decimals / peak ms rounded up, at least 1.
  std::string format() const;
};

// Why an authenticated receiver (--key-file) dropped a datagram. Such datagrams are never written.
enum class AuthReject : uint8_t {
  kNoKey = 0,     // sealed, but this receiver has no key
  kNotSealed,     // not sealed, but this receiver requires it
  kMalformed,     // too short for the seal's trailer
  kBadTag,        // forged, damaged, or sealed with another key
  kReplayed,      // of the current session, but taken before (older than the replay window)
  kStaleSession,  // of a session its sender started before the one it sends now
  kUnidentified,  // of a session older than the newest taken, before its kSenderInfo named it
};
inline constexpr size_t kAuthRejectCount = 7;
// The reason as the log names it ("bad tag"). Any thread.
std::string_view auth_reject_name(AuthReject r);

// One channel's files (the sender's --channel), or one sender's, for the metrics' `channel` and
// `sender` labels.
struct ChannelFiles {
  uint64_t passed = 0;
  uint64_t failed = 0;  // announced, then failed (a file only a list names has no channel known)
  uint64_t bytes = 0;   // of the files passed
};

struct AssemblerCounters {
  uint64_t datagrams = 0;
  uint64_t rejected[common::kDecodeStatusCount] = {};
  uint64_t truncated = 0;
  uint64_t other_session = 0;
  uint64_t senders_refused = 0;   // sender sessions refused a place (--max-senders)
  uint64_t unknown_file = 0;      // data/end for a file not (or no longer) in flight
  uint64_t filtered_packets = 0;  // data/end of a file --include/--exclude dropped
  uint64_t bad_data = 0;          // offset/length that do not fit the announced file
  uint64_t duplicates = 0;
  uint64_t handling_errors = 0;  // datagrams whose handling threw (memory, I/O set-up)
  uint64_t rebuilt_bad = 0;      // FEC output that failed its checksum (not from this sender)
  // Summed over files as each packet or chunk is taken (see FileRepairs): data packets FEC
  // rebuilt that went into a file, and chunks a later copy (--repeat) filled.
  uint64_t fec_rebuilt_used = 0;
  uint64_t repeat_filled = 0;
  // --compress (receiver/assembly/zframes.hpp): blocks decompressed whole, refused (bomb, damaged),
  // and dropped from the side buffer to stay within --compress-buffer-mb; their frames' bytes and
  // what those decompressed to.
  uint64_t zblocks_done = 0;
  uint64_t zblocks_bad = 0;
  uint64_t zblocks_evicted = 0;
  uint64_t zframe_bytes = 0;
  uint64_t zraw_bytes = 0;
  uint64_t auth_rejected[kAuthRejectCount] = {};
  uint64_t files_evicted = 0;       // failed to make room under --max-files-in-flight
  uint64_t records_suppressed = 0;  // refusals past the record rate limit (logged, no record)
  uint64_t files_passed = 0;
  uint64_t files_failed = 0;
  uint64_t files_refused = 0;
  uint64_t files_filtered = 0;     // refused by --include/--exclude (policy: logged, no record)
  uint64_t files_unannounced = 0;  // failed: named only by the sender's file list
  uint64_t files_joined_late = 0;  // their first packets went before this receiver started
  uint64_t listed_known = 0;       // listed files an earlier run of the receiver had finished
  uint64_t listed_elsewhere = 0;   // listed files another receiver's lanes carried
  uint64_t files_missed = 0;       // failed: named by the sender's history (sent while not here)
  uint64_t resends_skipped = 0;    // resent copies of files delivered already: not written
  uint64_t resends_delivered = 0;  // resent copies of files failed or missed: delivered
  uint64_t bytes_delivered = 0;
  uint64_t sessions = 0;
  uint64_t lost_in_past_sessions = 0;  // sequence gaps of the sessions before the current one
  std::map<std::string, ChannelFiles> channels;  // by channel, for files of one
  // By sender (SenderSession::label()), at most kSendersCounted, the rest under "other".
  std::map<std::string, ChannelFiles> senders;
  static constexpr size_t kSendersCounted = 256;
  ChannelFiles& sender_files(const std::string& label) {
    auto it = senders.find(label);
    if (it != senders.end()) return it->second;
    return senders[senders.size() < kSendersCounted ? label : std::string("other")];
  }
};

// A datagram whose payload does not decode: counted as rejected for a bad payload.
void count_bad_payload(AssemblerCounters& c);

// The current session's files, for its summary line (AssemblerCounters counts since start).
struct SessionFiles {
  uint64_t passed = 0;
  uint64_t failed = 0;
  uint64_t refused = 0;
  uint64_t filtered = 0;
};

// DR and FW (see IntervalStat) as the last Rcvd: line printed them (count 0 before the first),
// and summed since start.
struct WaitStats {
  IntervalStat dr_last;
  IntervalStat fw_last;
  IntervalStat dr_all;
  IntervalStat fw_all;
};

}  // namespace ddft::receiver
