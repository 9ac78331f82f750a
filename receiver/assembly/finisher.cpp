#include "receiver/assembly/finisher.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "common/log_format.hpp"

namespace ddft::receiver {

namespace {
// A write's cookie is its Block* (8-aligned: low bits clear); the committer's folder syncs carry
// Committer::kCookieTag in theirs.
static_assert(alignof(std::max_align_t) >= 4 && Committer::kCookieTag != 0);

// Reads `size` bytes of `fd` and hashes them into *digest. False, with *why set, when it cannot.
[[nodiscard]] bool hash_file(int fd, uint64_t size, common::VerifyType type, common::Digest* digest,
                             std::string* why) {
  std::vector<uint8_t> buf(1 << 20);
  auto h = common::make_hasher(type);
  uint64_t off = 0;
  while (off < size) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), size - off));
    const ssize_t n = ::pread(fd, buf.data(), want, static_cast<off_t>(off));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *why = fmt::format("cannot read the file back to verify it: {}",
                         n < 0 ? std::strerror(errno) : "short file");
      return false;
    }
    h->update({buf.data(), static_cast<size_t>(n)});
    off += static_cast<uint64_t>(n);
  }
  *digest = h->finish();
  return true;
}
}  // namespace

Finisher::Finisher(const ReceiverConfig& cfg, OutputDir& out, FsPool& fs, common::Clock& clock,
                   WriteEngine& engine, FileBlocks& blocks, FailureRecords& records,
                   AssemblerCounters& counters, Owner& owner)
    : cfg_(cfg),
      out_(out),
      fs_(fs),
      clock_(clock),
      engine_(engine),
      blocks_(blocks),
      records_(records),
      counters_(counters),
      owner_(owner) {
  make_committer();
}

void Finisher::set_journal(OutcomeLog* journal) {
  journal_ = journal;
  make_committer();  // it writes the journal's "C" lines
}

void Finisher::make_committer() {
  // Folder syncs go through the writer's queue like the data writes (and its backlog when full).
  auto submit_sync = [this](int fd, uint64_t cookie) { engine_.submit_sync(fd, cookie); };
  committer_ = std::make_unique<Committer>(
      out_, fs_, cfg_.null_sink ? WriteMode::kBuffered : cfg_.write_mode, journal_, submit_sync,
      [this](const CommitResult& r) { on_committed(r); });
}

void Finisher::finish(File& f) {
  f.tmp.direct_fd.reset();  // every write is done: one descriptor fewer while it waits
  if (f.verify == common::VerifyType::kNone) {
    commit(f);
    return;
  }
  if (f.hash_stream && f.hash_next == f.block_count(engine_.block_size())) {
    verified(f, f.hasher->finish());
    return;
  }
  read_back(f);
}

// Out-of-order data forced blocks out before they could be hashed: read the file back, on the
// pool (a large file takes seconds to read).
void Finisher::read_back(File& f) {
  f.state = FileState::kVerifying;
  ++f.ops_pending;
  auto got = std::make_shared<common::Digest>();
  auto ok = std::make_shared<bool>(false);
  auto why = std::make_shared<std::string>();
  fs_.post([fd = f.tmp.fd.get(), size = f.size, type = f.verify, got, ok,
            why] { *ok = hash_file(fd, size, type, got.get(), why.get()); },
           [this, ff = &f, got, ok, why] {
             // The file stays in the table while this is pending (ops_pending), so ff is alive.
             --ff->ops_pending;
             ff->state = FileState::kEnding;
             if (!*ok) {
               owner_.fail(*ff, *why);
             } else {
               verified(*ff, *got);
             }
           });
}

void Finisher::verified(File& f, const common::Digest& got) {
  const bool match = got.size == f.end.key_len &&
                     std::equal(got.bytes.begin(), got.bytes.begin() + got.size, f.end.key.begin());
  if (match) {
    commit(f);
    return;
  }
  const common::Digest sent = sent_key(f);
  const auto elapsed = clock_.now() - f.announced;
  spdlog::info(
      "File: {}, Trans: {} (bytes), Time: {}, Rate: {:.3f} (MB/s), Key: 0x{:08X}, {} "
      "Failed",
      f.path, common::with_commas(f.bytes_received), common::format_hms_ms(elapsed),
      common::mib_per_s(f.bytes_received, elapsed), sent.key32(),
      common::verify_type_name(f.verify));
  owner_.fail(f, fmt::format("verification failed: sender key {}, received data {}", sent.hex(),
                             got.hex()));
}

// Verified: the committer makes it durable (as the write mode says) and renames it into place;
// on_committed() hears back.
void Finisher::commit(File& f) {
  f.state = FileState::kCommitting;
  CommitRequest r;
  r.tmp = &f.tmp;
  r.mode = f.mode;
  r.mtime_ns = f.mtime_ns;
  r.cookie = reinterpret_cast<uint64_t>(&f);
  r.journal.kind = Outcome::Kind::kCommitting;
  r.journal.file = identity_of(f);
  committer_->add(r);
}

void Finisher::on_committed(const CommitResult& r) {
  File& f = *reinterpret_cast<File*>(r.cookie);
  f.state = FileState::kEnding;  // out of the committer's hands
  if (!r.ok) {
    if (r.error != 0) {
      f.sync_failed = true;
      f.io_error = r.error;
    }
    if (!r.moved_old.empty()) {
      spdlog::info("Info: {}: the existing file of that name was kept as {}", f.path, r.moved_old);
    }
    owner_.fail(f, r.reason);
    return;
  }
  deliver(f, r.moved_old);
}

void Finisher::deliver(File& f, const std::string& moved_old) {
  if (!moved_old.empty()) {
    spdlog::info("Info: {}: the existing file of that name was kept as {}", f.path, moved_old);
  }
  if (f.end.copies > 1) {
    spdlog::info("Info: {}: complete after copy {} of {} (--repeat)", f.path, f.last_copy + 1,
                 f.end.copies);
  }
  const auto elapsed = clock_.now() - f.announced;
  std::string key;
  if (f.verify == common::VerifyType::kNone) {
    key = "Key: none, NONE Not verified";
  } else {
    key = fmt::format("Key: 0x{:08X}, {} Passed", sent_key(f).key32(),
                      common::verify_type_name(f.verify));
  }
  spdlog::info("File: {}, Trans: {} (bytes), Time: {}, Rate: {:.3f} (MB/s), {}", f.path,
               common::with_commas(f.size), common::format_hms_ms(elapsed),
               common::mib_per_s(f.size, elapsed), key);
  // After the File: line, which stays DFTS's byte for byte: what it took to get the file whole.
  if (f.repairs.any()) {
    spdlog::info("Info: {}: repaired: FEC rebuilt {} packet(s), repeats filled {} chunk(s)", f.path,
                 f.repairs.fec_rebuilt, f.repairs.repeat_filled);
  }
  ++counters_.files_passed;
  if (!f.channel.empty()) {
    ChannelFiles& c = counters_.channels[f.channel];
    ++c.passed;
    c.bytes += f.size;
  }
  if (!f.sender.empty()) {
    ChannelFiles& c = counters_.sender_files(f.sender);
    ++c.passed;
    c.bytes += f.size;
  }
  if (SessionFiles* t = owner_.tally(f.session)) ++t->passed;
  owner_.passed(f);
  counters_.bytes_delivered += f.size;
  if (on_delivered_) notify_delivered(f, moved_old);
  // The journal says it passed; the origin it carried is no longer needed. Both on the pool,
  // which takes the file's descriptors with it.
  Outcome o;
  o.kind = Outcome::Kind::kPassed;
  o.file = identity_of(f);
  o.repairs = f.repairs;
  auto tmp = std::make_shared<TempFile>(std::move(f.tmp));
  fs_.post(
      [this, tmp, o, j = journal_] {
        // Best effort, as every journal line: the file is delivered and logged either way.
        if (j != nullptr) (void)j->append(o);
        out_.forget_origin(*tmp);
        tmp->fd.reset();
        tmp->dir.reset();
      },
      nullptr);
  owner_.end(f);
}

void Finisher::notify_delivered(const File& f, const std::string& moved_old) {
  DeliveredFile d;
  d.final_path = out_.final_path(f.path);
  d.channel = f.channel;
  d.sender = f.sender;
  d.repairs = f.repairs;
  d.file = identity_of(f);
  d.key = f.verify == common::VerifyType::kNone ? std::string("none")
                                                : fmt::format("0x{:08X}", sent_key(f).key32());
  if (!moved_old.empty()) {
    // The old file was moved within the new one's folder.
    const size_t slash = d.final_path.rfind('/');
    d.displaced_to = d.final_path.substr(0, slash + 1) + moved_old;
  }
  on_delivered_(d);
}

// The record of failed `f`, its reason completed with what the file's history explains.
FailureRecord Finisher::failure_record(File& f) {
  FailureRecord rec;
  rec.file = identity_of(f);
  rec.bytes_received = f.bytes_received;
  rec.repairs = f.repairs;
  rec.missing = missing_ranges(f, kMissingRangesInRecord, &rec.missing_ranges_total);
  if (f.joined_late && !rec.missing.empty() && rec.missing.front().first == 0 &&
      f.bytes_received > 0) {
    f.fail_reason = fmt::format("started before this receiver: bytes 0-{} missing ({})",
                                rec.missing.front().second, f.fail_reason);
  }
  if (f.ring_drops > 0 && f.fail_reason.find("receive buffer") == std::string::npos) {
    f.fail_reason += fmt::format(
        " ({} of its packets were dropped because the receive buffer was "
        "full)",
        f.ring_drops);
  }
  rec.reason = f.fail_reason;
  if (cfg_.lanes() > 1) rec.lane = f.striped ? common::kLaneAll : static_cast<int>(f.lane);
  // A full disk: keeping the partial data would keep the disk full for the files that follow.
  // A failed flush or sync: the data in the page cache can no longer be trusted.
  rec.discard_data = f.io_error == ENOSPC || f.io_error == EDQUOT || f.sync_failed;
  return rec;
}

void Finisher::record_failure(File& f) {
  f.record_posted = true;
  FailureRecord rec = failure_record(f);
  std::string ranges = format_missing(rec.missing);
  if (rec.missing_ranges_total > kMissingRangesInLog) {
    ranges += fmt::format(" and {} more", rec.missing_ranges_total - kMissingRangesInLog);
  }
  // A file that received nothing holds no data to keep: under a flood of announces its record
  // and line share the refusals' budget, taken when it failed (or now, at shutdown).
  rec.no_record =
      f.bytes_received == 0 && !(f.record_slot ? *f.record_slot : records_.take_slot(f.end_seen));
  SessionFiles* tally = owner_.tally(f.session);
  if (rec.no_record && tally != nullptr) {
    // Not named now (a flood, or a burst of files whose packets a full ring lost): if the
    // sender's file list names it later, the list vouches for it and its record is written then.
    records_.keep_unnamed(f.session, f.id, rec);
  }
  ++counters_.files_failed;
  if (!f.channel.empty()) ++counters_.channels[f.channel].failed;
  if (!f.sender.empty()) ++counters_.sender_files(f.sender).failed;
  if (tally != nullptr) ++tally->failed;
  blocks_.release_all(f);  // all written (no I/O is pending): free them now
  // The file's descriptors go with the record's task. The file stays in flight (and counts
  // against the bounds) until its record is written and its temporary file moved away.
  auto tmp = std::make_shared<TempFile>(std::move(f.tmp));
  std::string line =
      rec.no_record
          ? std::string()
          : fmt::format("Error: {} FAILED: {}; received {} of {} bytes{}{}", f.path, f.fail_reason,
                        common::with_commas(f.bytes_received), common::with_commas(f.size),
                        ranges.empty() ? "" : "; missing bytes " + ranges,
                        rec.discard_data ? (f.sync_failed ? "; data removed (its sync failed)"
                                                          : "; partial data removed (disk full)")
                                         : "");
  records_.write(rec, tmp, [this, ff = &f, tmp, line = std::move(line)](const std::string& where) {
    if (!line.empty()) {
      spdlog::error("{}; record: {}", line, where.empty() ? "could not be written" : where);
    }
    // The file stays in the table until this runs (record_posted), so ff is alive.
    owner_.end(*ff);
  });
}

}  // namespace ddft::receiver
