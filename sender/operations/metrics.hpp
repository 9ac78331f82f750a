// dd_file_send's Prometheus metrics (--metrics): every number the sender exposes, with what it
// means, read from a SendStatus the transmit threads keep up to date.
//
// Registered on main's thread before the server starts; the reads run on "dd-metrics", from
// atomics. Registration throws std::invalid_argument only for a bad metric (a bug).
#pragma once

#include "common/clock.hpp"
#include "common/metrics.hpp"
#include "sender/config.hpp"
#include "sender/send_status.hpp"

namespace ddft::sender {

// Registers the sender's metrics (ddft_send_*, and ddft_build_info) on `registry`, and a sampler
// of the wire rate. `status` and `clock` (the one the Sender paces with) must outlive every
// render of the registry.
void add_sender_metrics(common::MetricsRegistry& registry, const SendStatus& status,
                        const SenderConfig& cfg, const common::Clock& clock);

}  // namespace ddft::sender
