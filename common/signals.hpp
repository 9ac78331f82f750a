// Signal handling for the programs' main(): SIGINT/SIGTERM request a stop, which the pipeline
// stages see through their std::stop_token; SIGHUP reopens the log file (logrotate). Boost.Asio's
// signal_set does the signal-safe part.
//
// StopOnSignals is made on main's thread before the pipeline starts and owns the "dd-signals"
// thread, joined by its destructor. It throws what Boost.Asio throws when the signals cannot be
// set up (start-up).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <stop_token>
#include <thread>

namespace ddft::common {

// While alive, SIGINT and SIGTERM request a stop on `stop` (and log one line), and SIGHUP reopens
// the log file. Construct it in main before starting the pipeline; it owns a small thread that
// waits for the signals.
class StopOnSignals {
 public:
  explicit StopOnSignals(std::stop_source stop);
  ~StopOnSignals();
  StopOnSignals(const StopOnSignals&) = delete;
  StopOnSignals& operator=(const StopOnSignals&) = delete;

 private:
  boost::asio::io_context io_;
  void wait_hup();

  boost::asio::signal_set signals_;
  boost::asio::signal_set hup_;
  std::jthread thread_;
};

}  // namespace ddft::common
