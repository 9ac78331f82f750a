#include "sender/transmit/list_sender.hpp"

#include <spdlog/spdlog.h>

#include <span>

namespace ddft::sender {

ListSender::ListSender(const SenderConfig& cfg, LaneOutput& out, SessionList& list,
                       common::Clock& clock, size_t lane)
    : cfg_(cfg), out_(out), list_(list), clock_(clock), lane_(lane) {}

void ListSender::send_if_due() {
  const size_t waiting = list_.waiting(lane_);
  if (waiting == 0) return;
  const auto now = clock_.now();
  if (waiting < kListBatch && now - last_list_ < kListInterval) return;
  send(list_.take(lane_), 0);
  last_list_ = now;
}

void ListSender::send_last() {
  bool complete = false;
  const std::vector<ListedFile> files = list_.take_last(lane_, &complete);
  if (!files.empty()) send(files, complete ? common::kListComplete : 0);
  last_list_ = clock_.now();
}

void ListSender::send(const std::vector<ListedFile>& files, uint16_t flags) {
  // Views into `files`, which does not change while they are encoded.
  std::vector<common::FileListEntry> entries;
  entries.reserve(files.size());
  const size_t room = common::file_list_room(out_.source_size());
  for (const ListedFile& f : files) {
    common::FileListEntry e;
    e.file_id = f.file_id;
    e.size = f.size;
    e.verify = cfg_.verify;
    e.aborted = f.aborted;
    e.key_len = f.digest.size;
    e.key = f.digest.bytes;
    e.lane = f.lane;
    e.resend = f.resend;
    e.path = f.path;
    if (common::file_list_entry_size(e.key_len, e.path.size()) > room) {
      // Only with a small --packet-size and a path near the announce's limit: the file was sent,
      // but the list cannot name it.
      spdlog::warn(
          "Warn: {}: path too long for a file-list datagram of {} bytes; the receiver's "
          "list will not name it",
          f.path, cfg_.packet_size);
      continue;
    }
    entries.push_back(e);
  }
  std::span<const common::FileListEntry> rest(entries);
  size_t datagrams = 0;
  while (!rest.empty()) {
    // Every copy encodes the same entries into the same room, so each takes as many.
    size_t taken = 0;
    out_.send_control([&](const common::Header& h, std::span<uint8_t> buf) {
      return common::encode_file_list(h, flags, rest, buf, &taken);
    });
    rest = rest.subspan(taken);
    ++datagrams;
  }
  // Closed and sent now, as a file's end is: the list is protected without waiting for more.
  out_.close_window();
  out_.flush();
  spdlog::debug("file list of {} file(s){} in {} datagram(s)", entries.size(),
                flags & common::kListComplete ? " (complete)" : "", datagrams);
}

}  // namespace ddft::sender
