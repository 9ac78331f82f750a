#include "sender/source/entry_filter.hpp"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <filesystem>
#include <system_error>
#include <utility>

#include "common/json.hpp"
#include "sender/source/hot_folder_paths.hpp"

namespace ddft::sender {
namespace fs = std::filesystem;
using namespace hot_folder_paths;
namespace {

const char* kind_of(unsigned mode) {
  if (S_ISLNK(mode)) return "a symlink";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  return "not a regular file";
}

}  // namespace

EntryFilter::EntryFilter(const HotFolderOptions& opt, std::string own_prefix)
    : opt_(opt), own_prefix_(std::move(own_prefix)) {}

bool EntryFilter::admit(const std::string& rel) {
  // Another host's file (--shard): not a word about it, whatever it is; that host says it.
  if (!opt_.shard.takes(rel)) return false;
  // The receiver refuses such a name, and a hot folder deletes what it sent: it would be lost.
  for (const unsigned char c : rel) {
    if (c < 0x20 || c == 0x7F) {
      if (left_out(filtered_, rel)) {
        spdlog::warn(
            "Warn: hot folder: leaving {} in place, not sent: the receiver refuses names "
            "with control characters",
            common::json_quote(rel));
      }
      return false;
    }
  }
  auto why = opt_.filter.refusal(rel);
  if (!why) return true;
  if (left_out(filtered_, rel)) {
    spdlog::info("Info: hot folder: leaving '{}' in place, not sent: {}", rel, *why);
  }
  return false;
}

void EntryFilter::warn_not_regular(const std::string& rel, unsigned mode) {
  // Another host's (--shard): that host says it, and counts it.
  if (!opt_.shard.takes(rel) || !left_out(warned_, rel)) return;
  if (!S_ISLNK(mode)) {
    spdlog::warn("Warn: hot folder: skipping '{}': {} (only regular files are sent)", rel,
                 kind_of(mode));
    return;
  }
  std::error_code ec;
  const fs::path target = fs::read_symlink(opt_.dir + "/" + rel, ec);
  const std::string to = ec ? std::string("?") : target.string();
  std::string message;
  const bool failed = opt_.symlinks == SymlinkMode::kError;
  if (failed) {
    ++links_failed_;
    message = fmt::format(
        "hot folder: '{}' is a symbolic link (to '{}'; --symlinks error); it stays in the "
        "folder, not sent",
        rel, to);
    spdlog::error("Error: {}", message);
  } else {
    ++links_skipped_;
    message = fmt::format(
        "hot folder: skipping symbolic link '{}' (to '{}'; --symlinks skip: the hot folder "
        "never follows links)",
        rel, to);
    spdlog::warn("Warn: {}", message);
  }
  if (opt_.on_link) opt_.on_link(rel, message, failed);
}

void EntryFilter::note_reserved(const std::string& rel) {
  // The journal and its temporary and damaged copies are ours, and the default journals of the
  // other shards sharing DIR are theirs: no word about them.
  if (rel.starts_with(own_prefix_) || (opt_.shard.enabled() && rel.starts_with(kJournalName)) ||
      base_of(rel).starts_with(kFinishingPrefix)) {
    return;
  }
  if (left_out(filtered_, rel)) {
    spdlog::info(
        "Info: hot folder: leaving '{}' in place, not sent: names starting '{}' are "
        "reserved",
        rel, kReservedPrefix);
  }
}

bool EntryFilter::left_out(std::set<std::string>& seen, const std::string& rel) {
  if (!seen.insert(rel).second) return false;
  ++refused_;
  return true;
}

void EntryFilter::forget(const std::string& rel) {
  warned_.erase(rel);
  filtered_.erase(rel);
}

}  // namespace ddft::sender
