#include "sender/pipeline.hpp"

#include <openssl/rand.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <random>
#include <stdexcept>
#include <thread>

#include "common/log_format.hpp"
#include "common/named_thread.hpp"
#include "sender/read/compressor.hpp"
#include "sender/read/reader.hpp"
#include "sender/source/history_feed.hpp"
#include "sender/transmit/lane_hub.hpp"
#include "sender/transmit/lane_router.hpp"
#include "sender/transmit/transmitter.hpp"

namespace ddft::sender {

// The session's last word on --compress: what it saved.
void log_compression(const CompressTotals& c) {
  const double ratio = c.sent_bytes == 0
                           ? 1.0
                           : static_cast<double>(c.raw_bytes) / static_cast<double>(c.sent_bytes);
  spdlog::info(
      "Info: compression: {} of {} block(s) compressed; {} bytes of data sent as {} ({:.2f}x)",
      c.blocks_compressed, c.blocks, common::with_commas(c.raw_bytes),
      common::with_commas(c.sent_bytes), ratio);
}

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

Sender::Sender(const SenderConfig& cfg, std::vector<common::DatagramSink*> sinks,
               common::Clock& clock)
    : cfg_(cfg), sinks_(std::move(sinks)), clock_(clock), session_id_(new_session_id()) {
  if (sinks_.empty()) throw std::invalid_argument("a session needs a lane");
}

Sender::Sender(const SenderConfig& cfg, common::DatagramSink& sink, common::Clock& clock)
    : Sender(cfg, std::vector<common::DatagramSink*>{&sink}, clock) {}

SendTotals Sender::run(const std::vector<SourceFile>& files, std::stop_token stop) {
  ListSource source(files);
  return run(source, stop);
}

void Sender::log_start(const FileSource& files) const {
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
  // One lane: the line DFTS operators and their scripts know, byte for byte.
  std::string to = cfg_.lane_name(0);
  if (sinks_.size() > 1) {
    for (size_t i = 1; i < sinks_.size(); ++i) to += ", " + cfg_.lane_name(i);
    to += fmt::format(" ({} lanes, --rate per lane)", sinks_.size());
  }
  // Without --shard the line is the one DFTS operators' scripts read, byte for byte.
  const std::string shard = cfg_.shard.enabled() ? ", --shard " + cfg_.shard.to_string() : "";
  spdlog::info("Info: session {:016x}: {} to {}, packet {} bytes, rate {}, verify {}{}{}",
               session_id_, files.describe(), to, cfg_.packet_size,
               cfg_.rate_mb > 0 ? fmt::format("{} MB/s", cfg_.rate_mb) : "unlimited",
               common::verify_type_name(cfg_.verify), protection, shard);
  if (!cfg_.stripe_note.empty() && sinks_.size() > 1) spdlog::info("{}", cfg_.stripe_note);
}

SendTotals Sender::run(FileSource& files, std::stop_token stop) {
  const size_t lanes = sinks_.size();
  const size_t block = reader_block_size(cfg_);
  // One pool for the session, read_buffers blocks per lane: each lane's queue holds up to about
  // read_buffers blocks, so the reader can keep every lane fed (and read ahead) at once.
  BufferPool pool(cfg_.read_buffers * lanes, block);
  // Cheap (one pass over the pool), so done whether or not a synthetic source comes.
  pool.fill_pseudo_random();
  std::vector<std::unique_ptr<common::BoundedQueue<WorkItem>>> queues;
  std::vector<common::BoundedQueue<WorkItem>*> lane_queues;
  for (size_t i = 0; i < lanes; ++i) {
    queues.push_back(std::make_unique<common::BoundedQueue<WorkItem>>(cfg_.read_buffers + 4));
    lane_queues.push_back(queues.back().get());
  }
  LaneRouter router(lane_queues, uint64_t{cfg_.stripe_mb} << 20, block);
  // --compress: blocks pass through the dd-zstdN workers on their way to the lanes.
  std::optional<Compressor> compressor;
  if (cfg_.compress != CompressMode::kOff) {
    compressor.emplace(cfg_, pool, router);
    compressor->set_status(status_);
  }
  Reader reader(files, cfg_, clock_, pool,
                compressor ? static_cast<WorkSink&>(*compressor) : static_cast<WorkSink&>(router));
  LaneHub hub(lanes, cfg_.watch_dir.empty(), observers_);
  std::vector<std::unique_ptr<Transmitter>> txs;
  for (size_t i = 0; i < lanes; ++i) {
    txs.push_back(std::make_unique<Transmitter>(cfg_, session_id_, *sinks_[i], clock_, pool,
                                                *queues[i], hub, i, &router));
    txs.back()->set_status(status_);
    txs.back()->set_history(history_);
  }
  if (history_ != nullptr) history_->start_session(lanes);
  if (status_) status_->lanes_up.store(lanes, std::memory_order_relaxed);
  log_start(files);

  std::vector<std::exception_ptr> errors(lanes);
  // The session's own stop: the caller's, or a transmitter failing. A reader waiting in a
  // FileSource that blocks (the hot folder) wakes only on a stop, not on the queues closing.
  std::stop_source session_stop;
  std::stop_callback forward(stop, [&session_stop] { session_stop.request_stop(); });
  const auto run_lane = [&](size_t i) {
    try {
      txs[i]->run(session_stop.get_token());
    } catch (...) {
      errors[i] = std::current_exception();
      // Unblock the reader: nobody will drain this lane's queue or return its buffers any more;
      // and the other lanes' end barrier must not wait for this one.
      session_stop.request_stop();
      router.close();
      pool.close();
      hub.list().lane_done(i);
    }
  };
  {
    // The session's threads start and end here (joined as the scope closes).
    std::jthread reader_thread =
        common::start_named_thread("dd-read", [&] { reader.run(session_stop.get_token()); });
    std::vector<std::jthread> tx_threads;
    for (size_t i = 0; i < lanes; ++i) {
      const std::string name = lanes == 1 ? "dd-tx" : "dd-tx" + std::to_string(i);
      tx_threads.push_back(common::start_named_thread(name, [&run_lane, i] { run_lane(i); }));
    }
  }
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  SendTotals sum;
  sum.session_id = session_id_;
  for (const auto& tx : txs) {  // files that could not be opened included (kSkip)
    const SendTotals& t = tx->totals();
    sum.files_sent += t.files_sent;
    sum.files_failed += t.files_failed;
    sum.bytes += t.bytes;
    sum.datagrams += t.datagrams;
    sum.wire_bytes += t.wire_bytes;
    sum.history_bytes += t.history_bytes;
  }
  if (compressor) log_compression(compressor->totals());
  return sum;
}

}  // namespace ddft::sender
