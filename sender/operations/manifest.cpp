#include "sender/operations/manifest.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "common/json.hpp"
#include "sender/work_item.hpp"

namespace ddft::sender {

std::string manifest_line(std::chrono::system_clock::time_point time, uint64_t session_id,
                          uint32_t file_id, std::string_view path, uint64_t size,
                          common::VerifyType verify, std::string_view key, ManifestStatus status,
                          std::string_view reason) {
  const bool sent = status == ManifestStatus::kSent;
  std::string line =
      fmt::format(R"({{"time":"{}","session":"{:016x}","file_id":{},"path":{},"size":{},)"
                  R"("verify":"{}","key":{},"status":"{}")",
                  common::iso8601_local(time), session_id, file_id, common::json_quote(path), size,
                  common::verify_type_name(verify), key.empty() ? "null" : common::json_quote(key),
                  sent                                ? "sent"
                  : status == ManifestStatus::kFailed ? "failed"
                                                      : "skipped");
  if (!reason.empty() || !sent) line += R"(,"reason":)" + common::json_quote(reason);
  line += '}';
  return line;
}

namespace {

// A channel's file: the line names the channel too (its path already begins with it).
std::string with_channel(std::string line, const FileMeta& file) {
  if (file.channel.empty()) return line;
  line.pop_back();
  line += R"(,"channel":)" + common::json_quote(file.channel) + '}';
  return line;
}

}  // namespace

ManifestWriter::ManifestWriter(const std::string& path, common::VerifyType verify,
                               common::Clock& clock, WallClock wall)
    : path_(path), verify_(verify), clock_(clock), wall_(std::move(wall)) {
  fd_.reset(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  if (!fd_) {
    throw std::runtime_error(
        fmt::format("cannot open the manifest '{}': {}", path, std::strerror(errno)));
  }
  last_sync_ = clock_.now();
}

ManifestWriter::~ManifestWriter() { sync(); }

void ManifestWriter::session_started(uint64_t session_id) {
  std::lock_guard lock(mu_);
  session_id_ = session_id;
  started_ = true;
  for (const LeftOut& l : left_out_) append_left_out(l);
  left_out_.clear();
}

void ManifestWriter::file_sent(const FileMeta& file, const common::Digest& digest) {
  const std::string key = verify_ == common::VerifyType::kNone
                              ? std::string()
                              : fmt::format("0x{:08X}", digest.key32());
  std::string line =
      with_channel(manifest_line(wall_(), session_id_, file.file_id, file.path_on_wire(), file.size,
                                 verify_, key, ManifestStatus::kSent, ""),
                   file);
  if (file.resend_of) {
    // A resend: which file it is a copy of, for dd_reconcile.
    line.pop_back();
    line += fmt::format(R"(,"resend_of":{{"session":"{:016x}","file_id":{}}}}})",
                        file.resend_of->session, file.resend_of->file_id);
  }
  std::lock_guard lock(mu_);
  append(line);
}

void ManifestWriter::file_failed(const FileMeta& file, const std::string& reason) {
  std::lock_guard lock(mu_);
  append(with_channel(manifest_line(wall_(), session_id_, file.file_id, file.path_on_wire(),
                                    file.size, verify_, "", ManifestStatus::kFailed, reason),
                      file));
}

void ManifestWriter::session_finished(uint64_t /*session_id*/) { sync(); }

void ManifestWriter::link_left_out(std::string_view rel_path, std::string_view reason,
                                   bool failed) {
  std::lock_guard lock(mu_);
  LeftOut l{std::string(rel_path), std::string(reason), failed};
  if (!started_) {
    left_out_.push_back(std::move(l));
    return;
  }
  append_left_out(l);
}

void ManifestWriter::append_left_out(const LeftOut& l) {
  append(manifest_line(wall_(), session_id_, 0, l.rel_path, 0, verify_, "",
                       l.failed ? ManifestStatus::kFailed : ManifestStatus::kSkipped, l.reason));
}

void ManifestWriter::append(const std::string& line) {
  // After a cut-short write the file ends in part of a line: start on a line of our own, so
  // that only that part is unreadable.
  const std::string text = (broken_ ? "\n" : "") + line + "\n";
  ssize_t n;
  do {
    n = ::write(fd_.get(), text.data(), text.size());
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(text.size())) {
    const std::string why = n < 0 ? std::strerror(errno) : "short write (disk full?)";
    if (n > 0) broken_ = true;
    ++errors_;
    // The line goes to the log instead, so that it is not lost.
    spdlog::error("Error: cannot write to the manifest '{}': {}; its line: {}", path_, why, line);
    return;
  }
  broken_ = false;
  dirty_ = true;
  // Between files, at most once a second: bounds what a power cut can take to about a second's
  // lines for the cost of a disk flush a second on the transmit thread.
  const auto now = clock_.now();
  if (sync_each_line_ || now - last_sync_ >= std::chrono::seconds(1)) sync_locked();
}

bool ManifestWriter::sync() {
  std::lock_guard lock(mu_);
  return sync_locked();
}

bool ManifestWriter::sync_locked() {
  if (!dirty_ || !fd_) return true;
  last_sync_ = clock_.now();
  // EINVAL: a pipe or a device (--manifest /dev/stdout), which has nothing to sync.
  if (::fdatasync(fd_.get()) != 0 && errno != EINVAL) {
    ++errors_;
    spdlog::error("Error: cannot sync the manifest '{}': {}", path_, std::strerror(errno));
    return false;
  }
  dirty_ = false;
  ++syncs_;
  return true;
}

}  // namespace ddft::sender
