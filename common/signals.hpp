// SIGINT/SIGTERM handling for the programs' main(): a signal requests a stop, which the pipeline
// stages see through their std::stop_token. Boost.Asio's signal_set does the signal-safe part.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <stop_token>
#include <thread>

namespace ddft::common {

// While alive, SIGINT and SIGTERM request a stop on `stop` (and log one line). Construct it in
// main before starting the pipeline; it owns a small thread that waits for the signal.
class StopOnSignals {
 public:
  explicit StopOnSignals(std::stop_source stop);
  ~StopOnSignals();
  StopOnSignals(const StopOnSignals&) = delete;
  StopOnSignals& operator=(const StopOnSignals&) = delete;

 private:
  boost::asio::io_context io_;
  boost::asio::signal_set signals_;
  std::jthread thread_;
};

}  // namespace ddft::common
