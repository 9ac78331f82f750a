// A lane's share of the session's file list on the wire (sender/transmit/session_list.hpp): the
// entries this lane has not sent yet go out once kListBatch of them wait or kListInterval has
// passed since its last list, and at the session's end its last list (the complete one when it
// may be). A list is split over as many kFileList datagrams as it takes, each sent
// control_repeat times, and its FEC window is closed and sent at once, as a file's end is.
//
// One per lane, on its transmit thread. The config, output, list and clock are the caller's and
// must outlive it. What the output throws (LinkError) passes through; an entry whose path cannot
// fit a datagram is left out with a warning, never thrown.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/clock.hpp"
#include "sender/config.hpp"
#include "sender/transmit/lane_output.hpp"
#include "sender/transmit/session_list.hpp"

namespace ddft::sender {

class ListSender {
 public:
  // Lane `lane`'s lists of `list`, sent through `out`. References must outlive this.
  ListSender(const SenderConfig& cfg, LaneOutput& out, SessionList& list, common::Clock& clock,
             size_t lane);
  ListSender(const ListSender&) = delete;
  ListSender& operator=(const ListSender&) = delete;

  // The session starts at `now`: the first list is due kListInterval after it.
  void start(common::Clock::time_point now) { last_list_ = now; }
  // Sends the entries this lane has not sent yet when they are due.
  void send_if_due();
  // At the end of the session: the complete list when it may be, else the files since the last.
  void send_last();

 private:
  // Sends `files` as one list (split over datagrams, each control_repeat times).
  void send(const std::vector<ListedFile>& files, uint16_t flags);

  const SenderConfig& cfg_;
  LaneOutput& out_;
  SessionList& list_;
  common::Clock& clock_;
  size_t lane_;
  common::Clock::time_point last_list_{};
};

}  // namespace ddft::sender
