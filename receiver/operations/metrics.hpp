// dd_file_receive's Prometheus metrics (--metrics): every number the receiver exposes, with what
// it means, read from Receiver::status() once per scrape.
//
// Registered on main's thread before the server starts; the reads run on "dd-metrics" through
// Receiver's thread-safe status(). Registration throws std::invalid_argument only for a bad
// metric (a bug).
#pragma once

#include "common/metrics.hpp"
#include "receiver/config.hpp"
#include "receiver/pipeline.hpp"

namespace ddft::receiver {

// Registers the receiver's metrics (ddft_receive_*, and ddft_build_info) on `registry`. `rx`
// must outlive every render of the registry (stop the server before destroying it).
void add_receiver_metrics(common::MetricsRegistry& registry, const Receiver& rx,
                          const ReceiverConfig& cfg);
// Registers the ddft_sender_* families: each sender's last status (Receiver::status_board()).
// Called by add_receiver_metrics(); `rx` as there.
void add_sender_status_metrics(common::MetricsRegistry& registry, const Receiver& rx);

}  // namespace ddft::receiver
