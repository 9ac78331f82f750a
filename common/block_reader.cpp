#include "common/block_reader.hpp"

#include <algorithm>
#include <cstring>
#include <map>

namespace ddft::common {

ReadResult BlockReader::read_file(int fd, uint64_t size, const std::stop_token& stop,
                                  const BlockSink& sink, std::string* why) {
  // Blocks being read, and blocks read but waiting for an earlier one, by file offset (the
  // request's cookie). Reads complete in any order; blocks go on in file order.
  struct Block {
    int buf = -1;
    size_t want = 0;
    size_t got = 0;
    int error = 0;
    bool done = false;
  };
  std::map<uint64_t, Block> blocks;
  const auto on_done = [&](const IoCompletion& c) {
    Block& b = blocks.at(c.cookie);
    b.done = true;
    b.error = c.error;
    b.got = c.bytes;
  };
  // Waits for every read in flight and gives all held buffers back.
  const auto drain = [&] {
    while (io_.in_flight() > 0) io_.reap(true, on_done);
    for (auto& [off, b] : blocks) pool_.release(b.buf);
    blocks.clear();
  };
  uint64_t next_read = 0;
  uint64_t next_out = 0;
  while (next_out < size) {
    if (stop.stop_requested()) {
      drain();
      return ReadResult::kStopped;
    }
    // Read ahead while the engine has room. With reads already held, a buffer is only taken when
    // one is free: waiting for the consumer while holding the block it needs next would stall.
    while (next_read < size && blocks.size() < io_.capacity()) {
      const int buf = blocks.empty() ? pool_.acquire(share_) : pool_.try_acquire(share_);
      if (buf < 0) break;
      const size_t want =
          static_cast<size_t>(std::min<uint64_t>(pool_.buffer_size(), size - next_read));
      if (!io_.submit_read(fd, pool_.data(buf), want, next_read, next_read)) {
        pool_.release(buf);
        break;
      }
      blocks[next_read] = Block{buf, want};
      next_read += want;
    }
    if (blocks.empty()) return ReadResult::kRefused;  // the pool was closed
    io_.reap(!blocks.begin()->second.done, on_done);
    while (!blocks.empty() && blocks.begin()->first == next_out && blocks.begin()->second.done) {
      const Block b = blocks.begin()->second;
      blocks.erase(blocks.begin());
      if (b.error != 0 || b.got < b.want) {
        *why = b.error != 0 ? std::string("read error: ") + std::strerror(b.error)
                            : "file shrank while it was being read";
        pool_.release(b.buf);
        drain();
        return ReadResult::kFailed;
      }
      if (!sink(b.buf, next_out, b.got)) {
        pool_.release(b.buf);
        drain();
        return ReadResult::kRefused;
      }
      next_out += b.got;
    }
  }
  return ReadResult::kDone;
}

}  // namespace ddft::common
