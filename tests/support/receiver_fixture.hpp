// The integration tests' common fixture: a temp tree per test, a free UDP port on loopback, and
// a real dd_file_receive started on it, waited for until it logs that it is receiving.
//
// Header-only; for test programs built with DDFT_RECEIVE_BIN (and usually DDFT_SEND_BIN) defined
// to the binaries' paths, as tests/CMakeLists.txt does for every integration test.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "support/files.hpp"
#include "support/net.hpp"
#include "support/process.hpp"
#include "support/wait.hpp"

#ifndef DDFT_RECEIVE_BIN
#error "receiver_fixture.hpp needs DDFT_RECEIVE_BIN (the path of dd_file_receive)"
#endif

namespace ddft::testing {

// What the receiver logs once its socket is bound and its ring allocated: ready for a sender.
inline constexpr std::string_view kReceivingLine = "receiving on";

// "127.0.0.1:<port>", for --listen, --dest and --forward.
inline std::string loopback(uint16_t port) { return "127.0.0.1:" + std::to_string(port); }

// True once the log at `log` holds `line`, polled as eventually() does; false after `timeout`.
inline bool log_shows(const std::filesystem::path& log, std::string_view line,
                      std::chrono::milliseconds timeout) {
  return eventually([&] { return read_file(log).find(line) != std::string::npos; }, timeout);
}

// The running test's name as one path component ("Name/Param" becomes "Name_Param").
inline std::string current_test_name() {
  std::string n = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  std::replace(n.begin(), n.end(), '/', '_');
  return n;
}

// The arguments of a receiver with small buffers listening on `port` and writing into `out`:
// a 64 MB ring, 16 write buffers, a 32 MB socket buffer. `extra` is appended.
inline std::vector<std::string> small_receiver_argv(uint16_t port, const std::filesystem::path& out,
                                                    const std::vector<std::string>& extra = {}) {
  std::vector<std::string> argv = {DDFT_RECEIVE_BIN,
                                   "--listen",
                                   loopback(port),
                                   "--output",
                                   out.string(),
                                   "--buffer-mb",
                                   "64",
                                   "--write-buffers",
                                   "16",
                                   "--socket-buffer-mb",
                                   "32"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

// A test with its own folder, base_ = <tmp>/ddft_<tag>_<pid>_<test name> (emptied at the start,
// removed at the end unless the test failed, to be read), a UDP port on loopback that was free
// at the start (port_), and at most one receiver process (receiver_), killed at the end if still
// running. Derived fixtures that override SetUp() or TearDown() call these first (SetUp) or last
// (TearDown).
class ReceiverFixture : public ::testing::Test {
 protected:
  explicit ReceiverFixture(std::string tag) : tag_(std::move(tag)) {}

  void SetUp() override {
    base_ = std::filesystem::temp_directory_path() /
            ("ddft_" + tag_ + "_" + std::to_string(::getpid()) + "_" + current_test_name());
    std::filesystem::remove_all(base_);
    std::filesystem::create_directories(base_);
    port_ = free_udp_port();
  }
  void TearDown() override {
    receiver_.reset();
    if (raw_ >= 0) ::close(raw_);
    if (!HasFailure()) std::filesystem::remove_all(base_);
  }

  // Sends one datagram to port_ on loopback, as anything on that wire could.
  void send_raw(const std::vector<uint8_t>& d) {
    if (raw_ < 0) raw_ = ::socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port_);
    ::sendto(raw_, d.data(), d.size(), 0, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  }

  // Creates base_/name (and its parents) and returns its path.
  std::filesystem::path make_dir(const std::string& name) const {
    const std::filesystem::path p = base_ / name;
    std::filesystem::create_directories(p);
    return p;
  }
  std::string listen() const { return loopback(port_); }

  // Starts `argv` as receiver_, its output appended to `log`, and fails the calling test (a
  // fatal failure, returning from here) unless the log shows kReceivingLine within `timeout`.
  void start_receiver_process(const std::vector<std::string>& argv,
                              const std::filesystem::path& log,
                              std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    receiver_ = std::make_unique<Process>(argv, log);
    ASSERT_TRUE(log_shows(log, kReceivingLine, timeout)) << read_file(log);
  }

  // The logs the tests' programs write by default.
  std::filesystem::path rx_log_path() const { return base_ / "receive.log"; }
  std::filesystem::path tx_log_path() const { return base_ / "send.log"; }
  std::string rx_log() const { return read_file(rx_log_path()); }
  std::string tx_log() const { return read_file(tx_log_path()); }

  std::filesystem::path base_;
  uint16_t port_ = 0;
  std::unique_ptr<Process> receiver_;

 private:
  int raw_ = -1;  // send_raw()'s socket
  std::string tag_;
};

}  // namespace ddft::testing
