// Fuzz harness: the receiver's core in-process. Arbitrary sequences of datagrams go to a
// receiver::Assembler (the writer thread's work: sessions, files, FEC, write blocks, hashing,
// verification, rename or failure) with a FakeClock, the pread/pwrite BlockIo and small buffers,
// writing into a sandbox whose output folder holds symlinks planted to point outside it.
//
// Input: one settings byte, then records of  ctl (1 byte) | len (2 bytes, little-endian) | bytes
// (len bytes, or what is left of the input). Settings bits 0-1: collision policy (0 rename,
// 1 overwrite, 2 reject, 3 rename); bits 2-3: write mode (0 rw, 1 rwd, 2 rws, 3 rw); bit 4: the
// receiver has a key (--key-file, fuzz_key()) and takes sealed datagrams only.
// Record ctl bits:
//   bit 0      fix the header (magic, version, payload_len) and recompute the checksum (reseal,
//              or reseal_header when sealed), so that the payload handlers see mutated datagrams
//              instead of checksum failures
//   bits 1-3   advance the clock before the datagram: 0, 1 ms, 20 ms, 120 ms, 600 ms, 1.2 s, 6 s,
//              40 s (the grace after an end packet is 0.5 s, --file-timeout here 5 s)
//   bit 4      call poll() after it (timeouts, I/O completions)
//   bit 5      the datagram is dropped in a full receive ring instead: it goes to the drop ledger
//              and note_ring_drops(), not to the assembler
// A record of length 0 carries no datagram: it only moves the clock and polls.
// A datagram longer than --max-packet-size is cut as the ring cuts it (real_len stays its length).
// At the end the clock moves 40 s, poll() runs, then fail_all().
//
// Checked: no memory error or undefined behaviour (ASan, UBSan), no exception escapes, nothing
// stays in flight after fail_all(), and nothing is written outside the output folder (see
// Sandbox::verify()).
#include <chrono>
#include <memory>
#include <span>
#include <vector>

#include "common/aligned_buffer.hpp"
#include "common/block_io.hpp"
#include "common/clock.hpp"
#include "common/protocol.hpp"
#include "fuzz_support.hpp"
#include "receiver/assembly/assembler.hpp"
#include "receiver/config.hpp"
#include "receiver/delivery/output_dir.hpp"
#include "receiver/link/ingest.hpp"

namespace ddft::fuzz {
namespace {
using namespace std::chrono_literals;

// What lives for the whole process: the sandbox, the write pool and the IO engine. Each input
// gets a new Assembler, OutputDir and clock, so runs do not depend on each other.
struct Rig {
  Rig() : box("receiver") {
    quiet_logs();
    base.output = box.out().string();
    base.failed_dir = (box.out() / ".failed").string();
    base.write_block_kb = 64;
    base.write_buffers = 8;
    base.queue_depth = 4;
    base.fec_buffer_mb = 1;
    base.file_timeout_s = 5;
    base.report_mb = 1;
    memory = common::AlignedBuffer(base.write_buffers * base.write_block_kb * 1024);
    common::BlockIoOptions io;
    io.engine = common::IoEngine::kPwrite;  // deterministic: completes inside submit
    io.queue_depth = base.queue_depth;
    io.fixed = memory.span();
    writer = common::make_block_io(io, nullptr);
  }
  Sandbox box;
  receiver::ReceiverConfig base;
  common::AlignedBuffer memory;
  std::unique_ptr<common::BlockIo> writer;
};

constexpr std::chrono::nanoseconds kSteps[8] = {0ms, 1ms, 20ms, 120ms, 600ms, 1200ms, 6s, 40s};
constexpr receiver::CollisionPolicy kPolicies[4] = {
    receiver::CollisionPolicy::kRename, receiver::CollisionPolicy::kOverwrite,
    receiver::CollisionPolicy::kReject, receiver::CollisionPolicy::kRename};
constexpr receiver::WriteMode kModes[4] = {
    receiver::WriteMode::kBuffered, receiver::WriteMode::kDataSync, receiver::WriteMode::kFullSync,
    receiver::WriteMode::kBuffered};

void run(Rig& rig, const uint8_t* data, size_t size) {
  receiver::ReceiverConfig cfg = rig.base;
  cfg.on_collision = kPolicies[data[0] & 3];
  cfg.write_mode = kModes[(data[0] >> 2) & 3];
  if (data[0] & 16) cfg.keys = {fuzz_key()};
  common::FakeClock clock;
  receiver::OutputDir out(cfg.output, cfg.failed_dir, cfg.on_collision);
  receiver::Assembler assembler(cfg, out, *rig.writer, rig.memory, clock);
  receiver::DropLedger ledger;

  size_t pos = 1;
  while (pos + 3 <= size) {
    const uint8_t ctl = data[pos];
    const size_t want = common::load_le16(data + pos + 1);
    pos += 3;
    const size_t len = std::min(want, size - pos);
    // Exactly the datagram's size, so that ASan sees a read past its end.
    std::vector<uint8_t> dgram(data + pos, data + pos + len);
    pos += len;
    if ((ctl & 1) && len >= common::kHeaderSize) fix_header(dgram);
    clock.advance(kSteps[(ctl >> 1) & 7]);
    // The ring keeps at most max_packet_size bytes of a datagram and its real length.
    const size_t kept = std::min(len, cfg.max_packet_size);
    if (len == 0) {
      // a clock step only
    } else if (ctl & 32) {
      std::span<uint8_t> one(dgram.data(), kept);
      ledger.add({&one, 1}, {&len, 1});
      assembler.note_ring_drops(ledger.take());
    } else {
      assembler.on_datagram({dgram.data(), kept}, len);
    }
    if (ctl & 16) assembler.poll(false);
  }
  clock.advance(40s);
  assembler.poll(false);
  (void)assembler.session_finished();
  assembler.log_summary();
  assembler.fail_all("the fuzz input ended");
  require(assembler.idle() && !assembler.io_pending() && rig.writer->in_flight() == 0,
          "files or I/O are still in flight after fail_all()");
}

}  // namespace
}  // namespace ddft::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static ddft::fuzz::Rig rig;
  if (size < 1) return 0;
  rig.box.reset();
  ddft::fuzz::run(rig, data, size);
  rig.box.verify();
  return 0;
}
