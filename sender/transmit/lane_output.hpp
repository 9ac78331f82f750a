// A lane's datagrams on their way out: each numbered (the lane's own sequence), taken into the
// lane's FEC window (its parity sent when the window is full or closed), sealed with --key-file
// (a salt of the lane's own, so a key of its own), gathered into a batch of packet slots and sent
// under the pacer's rules. A full link buffer is waited out and retried, never dropped.
//
// What it promises:
// - The link is never quiet for longer than a heartbeat interval: during every DFTS sleep the
//   pacer's keepalive sends a heartbeat (the one `heartbeat` describes, flagged
//   kHeartbeatSleeping) from this thread, and a full link buffer is retried at least that often.
//   Such a heartbeat never overtakes a datagram numbered before it (the receiver would count the
//   gap as loss): a batch ends where an intra-packet sleep falls, and every sleep comes after a
//   batch's last datagram.
// - A keepalive heartbeat keeps FEC windows whole: it takes the next place in an open window,
//   and stays out of one whose parity is going out.
//
// One per lane, on its transmit thread (the pacer calls back into it: it stays where it was
// made). The config, sink, clock and totals are the caller's and must outlive it. Sending throws
// LinkError when the link refuses a datagram (anything but a full buffer), and std::logic_error
// or std::runtime_error for a datagram that cannot fit the packet size (a bug).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stop_token>
#include <string>
#include <system_error>
#include <vector>

#include "common/aligned_buffer.hpp"
#include "common/clock.hpp"
#include "common/protocol.hpp"
#include "common/seal.hpp"
#include "common/transport.hpp"
#include "sender/config.hpp"
#include "sender/send_status.hpp"
#include "sender/transmit/fec_encoder.hpp"
#include "sender/transmit/pacer.hpp"

namespace ddft::sender {

// A lane's link refused a send (anything but a full buffer). what() names the lane when the
// session has several: "lane 1 (127.0.0.1:5001): send failed: Network is unreachable".
class LinkError : public std::system_error {
 public:
  using std::system_error::system_error;
};

class LaneOutput {
 public:
  // This lane's heartbeat as it stands (not final), for the keepalive.
  using HeartbeatOf = std::function<common::Heartbeat()>;

  // Datagrams of session `session_id` down `sink`. `send_failed`: what a LinkError says before
  // the system's reason ("send failed", or "lane 1 (ADDRESS): send failed"). Datagrams and wire
  // bytes sent are added to `totals`.
  LaneOutput(const SenderConfig& cfg, uint64_t session_id, common::DatagramSink& sink,
             common::Clock& clock, std::string send_failed, SendTotals& totals,
             HeartbeatOf heartbeat);
  LaneOutput(const LaneOutput&) = delete;
  LaneOutput& operator=(const LaneOutput&) = delete;

  // Also publishes what is sent into `status` (null: not). Call before start().
  void set_status(SendStatus* status) { status_ = status; }
  // The session starts at `now`: the pacer's sleeps end early once `stop` is requested, and the
  // keepalive runs in them.
  void start(std::stop_token stop, common::Clock::time_point now);

  // The pacer, for the file-level sleeps (the sleep algorithm's pause, EOF_DELAY).
  Pacer& pacer() { return pacer_; }
  // The longest datagram but parity (the packet size less the FEC room).
  size_t source_size() const { return source_size_; }
  // Bytes sealing adds to each datagram on the wire (0 without --key-file).
  size_t seal_overhead() const { return sealer_ ? common::kSealOverhead : 0; }

  // The next header; source datagrams get their place in the FEC window.
  common::Header next_header(bool fec_source = true);
  // A packet slot of the batch to encode the next datagram into (the batch is sent first when
  // full, or when an intra-packet sleep falls here).
  std::span<uint8_t> next_slot();
  // Takes the datagram of `n` bytes just encoded in `slot` (the latest next_slot()) for sending;
  // with FEC it is added to its window first. `send` false: built, counted in its window, not
  // sent (the test hook's "lost on the link").
  void commit(std::span<uint8_t> slot, size_t n, bool send = true);
  // Sends a control datagram control_repeat times (or `copies` times when not 0); `flags` go
  // into each header.
  void send_control(const std::function<size_t(const common::Header&, std::span<uint8_t>)>& enc,
                    uint16_t flags = 0, unsigned copies = 0);
  // With FEC, sends the parity of the window so far and starts a new one.
  void close_window();
  // Sends the batch under the pacing rules: never more packets in one go than the intra-packet
  // interval allows, the rate limit before, the DFTS sleeps after.
  void flush();
  // The link is down: the batch is dropped unsent.
  void discard();

  // A heartbeat went out (from the caller, or the keepalive): the session has told its interval.
  void heartbeat_sent();
  common::Clock::time_point last_heartbeat() const { return last_heartbeat_; }

 private:
  // Holds `flag` true for its lifetime, exceptions included.
  class FlagScope {
   public:
    explicit FlagScope(bool& flag) : flag_(flag) { flag_ = true; }
    ~FlagScope() { flag_ = false; }
    FlagScope(const FlagScope&) = delete;
    FlagScope& operator=(const FlagScope&) = delete;

   private:
    bool& flag_;
  };

  // Adds the datagram of `n` bytes encoded in `slot` to the batch being built (no FEC
  // accounting), sealed first with --key-file.
  void enqueue(std::span<uint8_t> slot, size_t n);
  void send_all(std::span<const std::span<const uint8_t>> datagrams);
  // `datagrams` datagrams of `bytes` in all went out: the totals and the status.
  void count_sent(size_t datagrams, size_t bytes);
  // During a DFTS sleep: a heartbeat when the last datagram left keepalive_interval() ago or
  // more; returns when to be asked again. Sends nothing while datagrams encoded before it wait
  // unsent, or from within its own send.
  common::Clock::time_point keep_link_alive(common::Clock::time_point now);
  // The longest the link stays quiet while pacing: the heartbeat interval, but at most the
  // interval a receiver assumes until this session's first heartbeat has told it.
  std::chrono::nanoseconds keepalive_interval() const;
  // One heartbeat, sent at once outside the batch (once, not control_repeat times): an FEC
  // source while a window is open and not being closed (its places are numbered by sequence),
  // the window closed and its parity sent at once when it fills it.
  void send_keepalive();
  // Seals (with --key-file) the datagram of `n` bytes in `slot` and sends it now, counted.
  void send_now(std::span<uint8_t> slot, size_t n);

  const SenderConfig& cfg_;
  uint64_t session_id_;
  common::DatagramSink& sink_;
  common::Clock& clock_;
  std::string send_failed_;
  SendTotals& totals_;
  HeartbeatOf heartbeat_;
  SendStatus* status_ = nullptr;
  Pacer pacer_;
  size_t source_size_;
  std::unique_ptr<FecEncoder> fec_;
  std::unique_ptr<common::Sealer> sealer_;  // --key-file
  common::Clock::time_point last_heartbeat_{};
  common::Clock::time_point last_sent_{};  // when the link last took a datagram
  bool heartbeat_sent_ = false;            // this session has sent a heartbeat (its interval)
  bool closing_window_ = false;            // the FEC window's parity is being encoded
  bool keeping_alive_ = false;             // send_keepalive() is running
  // cfg.batch packet slots for the batch, then one for send_keepalive().
  common::AlignedBuffer arena_;
  std::vector<std::span<const uint8_t>> pending_;
  size_t pending_bytes_ = 0;
  size_t pending_sent_ = 0;  // of pending_, those already sent (flush() in progress)
  uint64_t seq_ = 0;
};

}  // namespace ddft::sender
