#include "receiver/delivery/committer.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cstring>
#include <utility>

namespace ddft::receiver {
namespace {

// A batch holds at most this many files, so that the Passed lines of a long burst are not all
// held back for one huge flush.
constexpr size_t kMaxBatch = 4096;
constexpr unsigned kDirBits = 20;  // folder index within a batch, in a sync's cookie

}  // namespace

Committer::Committer(OutputDir& out, FsPool& pool, WriteMode mode, OutcomeLog* journal,
                     SubmitSync submit_sync, Done done)
    : out_(out),
      pool_(pool),
      mode_(mode),
      journal_(journal),
      submit_sync_(std::move(submit_sync)),
      done_(std::move(done)) {}

void Committer::add(const CommitRequest& r) {
  collecting_.push_back(r);
  ++in_progress_;
  maybe_start();
}

void Committer::maybe_start() {
  if (flushing_ || collecting_.empty()) return;
  auto b = std::make_unique<Batch>();
  b->id = next_batch_++;
  const size_t n = std::min(collecting_.size(), kMaxBatch);
  for (size_t i = 0; i < n; ++i) {
    Item it;
    it.req = collecting_[i];
    b->items.push_back(std::move(it));
  }
  collecting_.erase(collecting_.begin(), collecting_.begin() + static_cast<ptrdiff_t>(n));
  flushing_ = true;
  Batch* raw = b.get();
  batches_.push_back(std::move(b));
  pool_.post([this, raw] { flush_and_rename(*raw); }, [this, raw] { on_flushed(*raw); });
}

// On a pool thread: nothing else touches the batch or its files meanwhile.
void Committer::flush_and_rename(Batch& b) {
  std::vector<TempFile*> files;
  for (Item& it : b.items) {
    out_.set_times(*it.req.tmp, it.req.mode, it.req.mtime_ns);
    files.push_back(it.req.tmp);
  }
  if (mode_ != WriteMode::kBuffered) {
    const FlushErrors errors = out_.flush_files(files, mode_ == WriteMode::kDataSync);
    for (size_t i = 0; i < b.items.size(); ++i) b.items[i].flush_error = errors[i];
  }
  // The journal says which files are about to take their final names before any does: a crash
  // between a rename and its Passed line is finished at the next start (Receiver's recovery).
  if (journal_ != nullptr) {
    for (const Item& it : b.items) {
      // Best effort, as every journal line: the rename goes ahead without it.
      if (it.flush_error == 0) (void)journal_->append(it.req.journal);
    }
  }
  // In order: two files of one name keep the sender's order under the collision policy.
  std::map<std::pair<uint64_t, uint64_t>, size_t> dir_index;
  auto add_dir = [&](Item& it, int fd, uint64_t dev, uint64_t ino) {
    auto [pos, added] = dir_index.emplace(std::make_pair(dev, ino), b.dirs.size());
    if (added) b.dirs.push_back({fd, 0});
    it.dirs.push_back(pos->second);
  };
  for (Item& it : b.items) {
    if (it.flush_error != 0) {
      it.reason = fmt::format("{} failed: {} (the data may not be on disk; not retried)",
                              mode_ == WriteMode::kDataSync ? "fdatasync" : "fsync",
                              std::strerror(it.flush_error));
      continue;
    }
    TempFile& t = *it.req.tmp;
    if (!out_.rename_into_place(t, &it.moved_old, &it.reason)) continue;
    it.renamed = true;
    if (mode_ == WriteMode::kBuffered) continue;
    add_dir(it, t.dir.get(), t.dir_dev, t.dir_ino);
  }
  // Folders made since the last batch: their entries are synced with this batch, whichever of
  // the files under them it holds (every file of the batch was made after them, so it depends
  // on them), and a failed sync of one fails the whole batch's renamed files.
  b.new_parents = out_.take_new_folder_parents();
  if (mode_ == WriteMode::kBuffered) return;
  for (const auto& parent : b.new_parents) {
    struct stat st {};
    if (::fstat(parent.get(), &st) != 0) continue;
    auto [pos, added] = dir_index.emplace(std::make_pair(st.st_dev, st.st_ino), b.dirs.size());
    if (added) b.dirs.push_back({parent.get(), 0});
    for (Item& it : b.items) {
      if (it.renamed) it.dirs.push_back(pos->second);
    }
  }
}

void Committer::on_flushed(Batch& b) {
  flushing_ = false;
  b.syncs_pending = b.dirs.size();
  for (size_t i = 0; i < b.dirs.size(); ++i) {
    submit_sync_(b.dirs[i].fd, (((b.id << kDirBits) | i) << 2) | kCookieTag);
  }
  if (b.syncs_pending == 0) {
    b.done = true;
    release();
  }
  maybe_start();
}

void Committer::on_dir_synced(uint64_t cookie, int error) {
  const uint64_t v = cookie >> 2;
  const uint64_t id = v >> kDirBits;
  const size_t dir = static_cast<size_t>(v & ((uint64_t{1} << kDirBits) - 1));
  for (auto& b : batches_) {
    if (b->id != id) continue;
    if (dir < b->dirs.size() && error != 0 && b->dirs[dir].error == 0) b->dirs[dir].error = error;
    if (b->syncs_pending > 0 && --b->syncs_pending == 0) {
      b->done = true;
      release();
    }
    return;
  }
}

// Results go out in the order files were added: a later batch that finished first waits.
void Committer::release() {
  while (!batches_.empty() && batches_.front()->done) {
    std::unique_ptr<Batch> b = std::move(batches_.front());
    batches_.pop_front();
    for (Item& it : b->items) {
      CommitResult r;
      r.cookie = it.req.cookie;
      r.renamed = it.renamed;
      r.moved_old = it.moved_old;
      if (it.flush_error != 0) {
        r.error = it.flush_error;
        r.reason = it.reason;
      } else if (!it.renamed) {
        r.reason = it.reason;
      } else {
        for (size_t d : it.dirs) {
          if (b->dirs[d].error == 0) continue;
          r.error = b->dirs[d].error;
          r.reason = fmt::format(
              "the folder sync after the rename failed: {} (the new name may "
              "not be on disk; not retried)",
              std::strerror(r.error));
          break;
        }
        r.ok = r.error == 0;
      }
      --in_progress_;
      done_(r);
    }
  }
}

}  // namespace ddft::receiver
