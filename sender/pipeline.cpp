#include "sender/pipeline.hpp"

#include <openssl/rand.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <random>
#include <thread>

#include "common/logging.hpp"
#include "common/named_thread.hpp"
#include "sender/reader.hpp"
#include "sender/transmitter.hpp"

namespace ddft::sender {

size_t reader_block_size(const SenderConfig& cfg) {
  const size_t chunk = data_chunk_size(cfg);
  return std::max<size_t>(1, cfg.read_block_kb * 1024 / chunk) * chunk;
}

uint64_t new_session_id() {
  uint64_t id = 0;
  while (id == 0) {
    if (RAND_bytes(reinterpret_cast<unsigned char*>(&id), sizeof id) != 1) {
      std::random_device rd;
      id = (uint64_t{rd()} << 32) ^ rd();
    }
  }
  return id;
}

Sender::Sender(const SenderConfig& cfg, common::DatagramSink& sink, common::Clock& clock)
    : cfg_(cfg), sink_(sink), clock_(clock), session_id_(new_session_id()) {}

SendTotals Sender::run(const std::vector<SourceFile>& files, std::stop_token stop) {
  ListSource source(files);
  return run(source, stop);
}

SendTotals Sender::run(FileSource& files, std::stop_token stop) {
  BufferPool pool(cfg_.read_buffers, reader_block_size(cfg_));
  // Cheap (one pass over the pool), so done whether or not a synthetic source comes.
  pool.fill_pseudo_random();
  common::BoundedQueue<WorkItem> queue(cfg_.read_buffers + 4);
  Reader reader(files, cfg_, clock_, pool, queue);
  Transmitter tx(cfg_, session_id_, sink_, clock_, pool, queue, observers_);
  tx.set_status(status_);
  std::string protection;
  if (cfg_.fec.enabled()) {
    protection += fmt::format(", FEC {} (+{:.1f}% packets)", common::format_fec(cfg_.fec),
                              100.0 * cfg_.fec.m / cfg_.fec.k);
  }
  if (cfg_.repeat > 1) protection += fmt::format(", each file sent {} times", cfg_.repeat);
  if (cfg_.key) {
    protection += cfg_.auth_only ? ", sealed: authenticated (AES-256-GCM), not encrypted"
                                 : ", sealed: authenticated and encrypted (AES-256-GCM)";
  }
  spdlog::info("Info: session {:016x}: {} to {}, packet {} bytes, rate {}, verify {}{}",
               session_id_, files.describe(),
               cfg_.transport == common::TransportKind::kDevice ? "device " + cfg_.device
                                                                : cfg_.dest.to_string(),
               cfg_.packet_size,
               cfg_.rate_mb > 0 ? fmt::format("{} MB/s", cfg_.rate_mb) : "unlimited",
               common::verify_type_name(cfg_.verify), protection);

  std::exception_ptr tx_error;
  // The session's own stop: the caller's, or the transmitter failing. A reader waiting in a
  // FileSource that blocks (the hot folder) wakes only on a stop, not on the queue closing.
  std::stop_source session_stop;
  std::stop_callback forward(stop, [&session_stop] { session_stop.request_stop(); });
  {
    // The session's two threads start and end here (joined as the scope closes).
    std::jthread reader_thread =
        common::start_named_thread("dd-read", [&] { reader.run(session_stop.get_token()); });
    std::jthread tx_thread = common::start_named_thread("dd-tx", [&] {
      try {
        tx.run(session_stop.get_token());
      } catch (...) {
        tx_error = std::current_exception();
        // Unblock the reader: nobody will drain its queue or return its buffers any more.
        session_stop.request_stop();
        queue.close();
        pool.close();
      }
    });
  }
  if (tx_error) std::rethrow_exception(tx_error);
  return tx.totals();  // files that could not be opened included (kSkip)
}

}  // namespace ddft::sender
