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
#include "sender/transmit/channel_mux.hpp"
#include "sender/transmit/lane_hub.hpp"
#include "sender/transmit/lane_router.hpp"
#include "sender/transmit/status_report.hpp"
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

SendTotals Sender::run(FileSource& files, std::stop_token stop) {
  return run(std::vector<SessionChannel>{SessionChannel{"", {}, &files, ""}}, stop);
}

void Sender::log_start(const std::vector<SessionChannel>& channels) const {
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
  // Without channels, the source's own words.
  std::string what;
  for (const SessionChannel& c : channels) {
    const std::string d = c.description.empty() ? c.files->describe() : c.description;
    what += (what.empty() ? "" : "; ") + (c.name.empty() ? d : "channel " + c.name + ": " + d);
  }
  // Without --shard the line is the one DFTS operators' scripts read, byte for byte.
  const std::string shard = cfg_.shard.enabled() ? ", --shard " + cfg_.shard.to_string() : "";
  spdlog::info("Info: session {:016x}: {} to {}, packet {} bytes, rate {}, verify {}{}{}",
               session_id_, what, to, cfg_.packet_size,
               cfg_.rate_mb > 0 ? fmt::format("{} MB/s", cfg_.rate_mb) : "unlimited",
               common::verify_type_name(cfg_.verify), protection, shard);
  if (!cfg_.stripe_note.empty() && sinks_.size() > 1) spdlog::info("{}", cfg_.stripe_note);
}

namespace {

// Where the session's routers push and its transmitters take from: a queue per lane (no
// channels), or a ChannelMux that interleaves the channels on every lane.
class LaneFeeds {
 public:
  LaneFeeds(const std::vector<SessionChannel>& channels, size_t lanes, size_t capacity,
            common::Clock& clock) {
    if (channels.size() == 1 && channels.front().name.empty()) {
      inputs_.emplace_back();
      for (size_t k = 0; k < lanes; ++k) {
        queues_.push_back(std::make_unique<common::BoundedQueue<WorkItem>>(capacity));
        sinks_.push_back(std::make_unique<QueueSink>(*queues_.back()));
        feeds_.push_back(std::make_unique<QueueFeed>(*queues_.back()));
        inputs_[0].push_back(sinks_.back().get());
        outputs_.push_back(feeds_.back().get());
      }
      return;
    }
    std::vector<ChannelPolicy> policies;
    for (const SessionChannel& c : channels) policies.push_back(c.policy);
    mux_.emplace(std::move(policies), lanes, capacity, clock);
    inputs_.resize(channels.size());
    for (size_t c = 0; c < channels.size(); ++c) {
      for (size_t k = 0; k < lanes; ++k) inputs_[c].push_back(&mux_->input(c, k));
    }
    for (size_t k = 0; k < lanes; ++k) outputs_.push_back(&mux_->output(k));
  }
  // Channel `c`'s sink on every lane, lane 0 first.
  const std::vector<WorkSink*>& inputs(size_t c) const { return inputs_[c]; }
  WorkFeed& output(size_t lane) { return *outputs_[lane]; }
  // Every input refuses from now on; the outputs drain what is queued.
  void close() {
    if (mux_) mux_->close();
    for (auto& q : queues_) q->close();
  }

 private:
  std::vector<std::unique_ptr<common::BoundedQueue<WorkItem>>> queues_;
  std::vector<std::unique_ptr<QueueSink>> sinks_;
  std::vector<std::unique_ptr<QueueFeed>> feeds_;
  std::optional<ChannelMux> mux_;
  std::vector<std::vector<WorkSink*>> inputs_;
  std::vector<WorkFeed*> outputs_;
};

// One channel's reading side: its reader, router and (under --compress) compressor.
struct ChannelStage {
  std::unique_ptr<LaneRouter> router;
  std::optional<Compressor> compressor;
  std::unique_ptr<Reader> reader;
};

// The session's totals: the sums over its lanes, files that could not be opened included.
SendTotals sum_of(const std::vector<std::unique_ptr<Transmitter>>& txs) {
  SendTotals sum;
  for (const auto& tx : txs) {
    const SendTotals& t = tx->totals();
    sum.files_sent += t.files_sent;
    sum.files_failed += t.files_failed;
    sum.bytes += t.bytes;
    sum.datagrams += t.datagrams;
    sum.wire_bytes += t.wire_bytes;
    sum.history_bytes += t.history_bytes;
  }
  return sum;
}

// Each channel's name and source, for the status report.
std::vector<std::pair<std::string, const FileSource*>> sources_of(
    const std::vector<SessionChannel>& channels) {
  std::vector<std::pair<std::string, const FileSource*>> out;
  for (const SessionChannel& c : channels) out.emplace_back(c.name, c.files);
  return out;
}

// Each channel's reader, router and compressor, into the channel's inputs of `feeds`.
std::vector<ChannelStage> channel_stages(const SenderConfig& cfg, common::Clock& clock,
                                         SendStatus* status,
                                         const std::vector<SessionChannel>& channels,
                                         BufferPool& pool, LaneFeeds& feeds, LaneLoad& load,
                                         FileIds& ids) {
  const size_t block = reader_block_size(cfg);
  std::vector<ChannelStage> stages(channels.size());
  for (size_t c = 0; c < channels.size(); ++c) {
    ChannelStage& st = stages[c];
    st.router =
        std::make_unique<LaneRouter>(load, feeds.inputs(c), uint64_t{cfg.stripe_mb} << 20, block);
    // --compress: blocks pass through the dd-zstdN workers on their way to the lanes.
    if (cfg.compress != CompressMode::kOff) {
      st.compressor.emplace(cfg, pool, *st.router);
      st.compressor->set_status(status);
    }
    WorkSink& out =
        st.compressor ? static_cast<WorkSink&>(*st.compressor) : static_cast<WorkSink&>(*st.router);
    st.reader = std::make_unique<Reader>(*channels[c].files, cfg, clock, pool, out,
                                         ReadChannel{channels[c].name, c, &ids});
    st.reader->set_status(status);
  }
  return stages;
}

}  // namespace

void Sender::start_session(const std::vector<SessionChannel>& channels) {
  const size_t lanes = sinks_.size();
  if (report_ != nullptr) report_->session_started(sources_of(channels), lanes, clock_.now());
  if (history_ != nullptr) history_->start_session(lanes);
  if (status_) {
    status_->lanes_up.store(lanes, std::memory_order_relaxed);
    status_->lanes_up_mask.store(lanes >= 64 ? ~uint64_t{0} : (uint64_t{1} << lanes) - 1,
                                 std::memory_order_relaxed);
  }
  log_start(channels);
}

SendTotals Sender::run(const std::vector<SessionChannel>& channels, std::stop_token stop) {
  const size_t lanes = sinks_.size();
  const size_t block = reader_block_size(cfg_);
  // Each channel's share of the pool is read_buffers blocks per lane: each lane's queue holds up
  // to about read_buffers blocks, so the reader can keep every lane fed (and read ahead) at once,
  // and one channel emptying its share never holds another's file back.
  BufferPool pool(std::vector<size_t>(channels.size(), cfg_.read_buffers * lanes), block);
  // Cheap (one pass over the pool), so done whether or not a synthetic source comes.
  pool.fill_pseudo_random();
  LaneFeeds feeds(channels, lanes, cfg_.read_buffers + 4, clock_);
  LaneLoad load(lanes);
  FileIds ids(cfg_.first_file_id);
  std::vector<ChannelStage> stages =
      channel_stages(cfg_, clock_, status_, channels, pool, feeds, load, ids);
  LaneHub hub(lanes, !cfg_.hot_folder(), observers_);
  std::vector<std::unique_ptr<Transmitter>> txs;
  for (size_t i = 0; i < lanes; ++i) {
    txs.push_back(std::make_unique<Transmitter>(cfg_, session_id_, *sinks_[i], clock_, pool,
                                                feeds.output(i), hub, i, &load));
    txs.back()->set_status(status_);
    txs.back()->set_history(history_);
    txs.back()->set_status_report(report_);
  }
  start_session(channels);

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
      // Unblock the readers: nobody will drain this lane's queue or return its buffers any more;
      // and the other lanes' end barrier must not wait for this one.
      session_stop.request_stop();
      feeds.close();
      pool.close();
      hub.list().lane_done(i);
    }
  };
  {
    // The session's threads start and end here (joined as the scope closes).
    std::vector<std::jthread> reader_threads;
    for (size_t c = 0; c < channels.size(); ++c) {
      const std::string name = channels[c].name.empty() ? "dd-read" : "dd-read-" + channels[c].name;
      Reader& reader = *stages[c].reader;
      // Of several hot folders, one that can go on no more (its folder gone) ends the session,
      // as a single hot folder's end does.
      const bool ends_session = cfg_.hot_folder() && channels.size() > 1;
      reader_threads.push_back(
          common::start_named_thread(name, [&reader, &session_stop, ends_session] {
            reader.run(session_stop.get_token());
            if (ends_session) session_stop.request_stop();
          }));
    }
    std::vector<std::jthread> tx_threads;
    for (size_t i = 0; i < lanes; ++i) {
      const std::string name = lanes == 1 ? "dd-tx" : "dd-tx" + std::to_string(i);
      tx_threads.push_back(common::start_named_thread(name, [&run_lane, i] { run_lane(i); }));
    }
  }
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  SendTotals sum = sum_of(txs);
  sum.session_id = session_id_;
  CompressTotals compressed;
  for (const ChannelStage& st : stages) {
    if (st.compressor) compressed += st.compressor->totals();
  }
  if (cfg_.compress != CompressMode::kOff) log_compression(compressed);
  return sum;
}

}  // namespace ddft::sender
