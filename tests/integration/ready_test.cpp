// "Ready means ready" with the real binaries:
//   - a sender started the instant the receiver looks up (its port is bound, or its `receiving
//     on` line appears), unpaced, loses nothing although preparing the receiver's ring takes far
//     longer than such a sender needs to fill the socket buffer;
//   - the systemd notify protocol for real, on an AF_UNIX datagram socket of the test's own:
//     READY=1 only once the ring is prepared and the port is bound, WATCHDOG=1 pings that stop
//     while the writer is stalled, STOPPING=1 on SIGTERM.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/files.hpp"
#include "support/host_probe.hpp"
#include "support/process.hpp"
#include "support/receiver_fixture.hpp"

namespace ddft::testing {
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif

namespace {
namespace fs = std::filesystem;
using namespace std::chrono;

// True when a UDP socket is bound to 127.0.0.1:port (a line of /proc/net/udp): from then on the
// kernel queues datagrams sent to it.
bool udp_port_bound(uint16_t port) {
  char local[32];
  std::snprintf(local, sizeof local, "0100007F:%04X", port);
  std::ifstream in("/proc/net/udp");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string slot, addr;
    fields >> slot >> addr;
    if (addr == local) return true;
  }
  return false;
}

// A field of /proc/PID/status in kB ("VmRSS", "VmLck"); -1 when it cannot be read.
long status_kb(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
  }
  return -1;
}

class Ready : public ReceiverFixture {
 protected:
  Ready() : ReceiverFixture("ready") {}
  void SetUp() override {
    ReceiverFixture::SetUp();
    out_ = make_dir("out");
  }
  int send(std::vector<std::string> args) {
    std::vector<std::string> argv = {DDFT_SEND_BIN, "--dest", listen()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv, base_ / "send.log", seconds(60));
  }
  // Polls every millisecond (a sender that waits for the daemon does not wait longer) until
  // `pred` holds or `timeout` passes.
  template <typename Pred>
  static bool soon(Pred pred, milliseconds timeout) {
    const auto end = steady_clock::now() + timeout;
    while (steady_clock::now() < end) {
      if (pred()) return true;
      std::this_thread::sleep_for(milliseconds(1));
    }
    return pred();
  }

  fs::path out_;
};

// ---------------------------------------------------------------------------------------------
// A sender started the instant the receiver looks up.

// The ring: preparing it must take far longer than an unpaced sender needs to fill the 64 MiB
// socket buffer, or the test would pass whatever the order of the start-up; 1024 MB (the
// default) does, with room to spare (docs/operations.md says how long preparing takes).
constexpr const char* kBigRingMb = "1024";
// Unpaced, 256 MiB: four times the socket buffer, so a socket that nobody drains overflows.
const std::vector<std::string> kSources = {"synthetic:100M", "synthetic:80M", "synthetic:76M"};

#if defined(__SANITIZE_ADDRESS__)
// Under AddressSanitizer (scripts/sanitize.sh) the programs run at about half speed, and an
// unpaced sender overruns the receive thread whenever it runs, which says nothing about start-up.
// 100 MB/s still fills the 64 MiB socket buffer well before the ring is prepared.
constexpr const char* kRate = "100";
#else
constexpr const char* kRate = "0";
#endif

enum class StartAt { kPortBound, kReadyLine };

class ReadyUnpaced : public Ready, public ::testing::WithParamInterface<StartAt> {};

TEST_P(ReadyUnpaced, SenderStartedAtOnceLosesNothing) {
  // Without root the socket buffer is capped at net.core.rmem_max, which an unpaced sender
  // overruns whatever the order: that run would say nothing about start-up. The host is asked
  // with a socket of the test's own; where it grants the buffer, the receiver must get it too.
  if (const std::string why = udp_receive_buffer_missing(size_t{64} << 20); !why.empty()) {
    GTEST_SKIP() << why;
  }
  const auto t0 = steady_clock::now();
  receiver_ = std::make_unique<Process>(
      std::vector<std::string>{DDFT_RECEIVE_BIN, "--listen", listen(), "--output", out_.string(),
                               "--buffer-mb", kBigRingMb, "--socket-buffer-mb", "64", "--once"},
      base_ / "receive.log");
  // The port bound is when a sender's datagrams start to queue in the kernel (what a sender
  // started by a unit ordered After= the receiver meets); the `receiving on` line is what an
  // operator waits for. Were the port bound before the ring is populated, the socket buffer
  // would overflow while nobody drains it, and the first case would lose datagrams.
  const bool up =
      GetParam() == StartAt::kPortBound
          ? soon([&] { return udp_port_bound(port_); }, seconds(30))
          : soon([&] { return rx_log().find("receiving on") != std::string::npos; }, seconds(30));
  ASSERT_TRUE(up) << rx_log();
  const double prepare_s = duration<double>(steady_clock::now() - t0).count();
  RecordProperty("seconds_to_up", std::to_string(prepare_s));
  ASSERT_EQ(send([] {
              std::vector<std::string> a = kSources;
              a.insert(a.end(), {"--rate", kRate});
              return a;
            }()),
            0)
      << tx_log();
  ASSERT_EQ(receiver_->wait(seconds(60)), 0) << rx_log();
  const std::string log = rx_log();
  EXPECT_EQ(log.find("capped the socket receive buffer"), std::string::npos) << log;
  std::cout << "up after " << prepare_s << " s\n";
  const std::regex passed("B2B Passed");
  EXPECT_EQ(
      std::distance(std::sregex_iterator(log.begin(), log.end(), passed), std::sregex_iterator()),
      3)
      << log;
  EXPECT_NE(log.find("3 file(s) passed, 0 failed"), std::string::npos) << log;
  EXPECT_NE(log.find(" received, 0 lost,"), std::string::npos) << log;
  EXPECT_EQ(log.find("the kernel dropped"), std::string::npos) << log;
  EXPECT_EQ(log.find("receive buffer full"), std::string::npos) << log;
  EXPECT_TRUE(failed_records(out_).empty());
}

std::string start_at_name(const ::testing::TestParamInfo<StartAt>& p) {
  return p.param == StartAt::kPortBound ? "PortBound" : "ReadyLine";
}
INSTANTIATE_TEST_SUITE_P(StartAt, ReadyUnpaced,
                         ::testing::Values(StartAt::kPortBound, StartAt::kReadyLine),
                         start_at_name);

// ---------------------------------------------------------------------------------------------
// The notify protocol.

// The service manager's end of NOTIFY_SOCKET: an AF_UNIX datagram socket that also takes the
// sender's credentials (SO_PASSCRED), as systemd does for NotifyAccess=main.
class NotifySocket {
 public:
  explicit NotifySocket(const fs::path& path) : path_(path) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    const int one = 1;
    ok_ = fd_ >= 0 && path.string().size() < sizeof addr.sun_path &&
          ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
          ::setsockopt(fd_, SOL_SOCKET, SO_PASSCRED, &one, sizeof one) == 0;
  }
  ~NotifySocket() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool ok() const { return ok_; }

  struct Message {
    std::string text;
    pid_t pid = -1;  // the sending process, from its credentials
    steady_clock::time_point at;
  };
  // The next message, or nothing within `timeout`.
  std::optional<Message> next(milliseconds timeout) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) != 1) return std::nullopt;
    char buf[4096];
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))];
    iovec iov{buf, sizeof buf};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t n = ::recvmsg(fd_, &msg, 0);
    if (n < 0) return std::nullopt;
    Message m;
    m.at = steady_clock::now();
    m.text.assign(buf, static_cast<size_t>(n));
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
        ucred cred;
        std::memcpy(&cred, CMSG_DATA(c), sizeof cred);
        m.pid = cred.pid;
      }
    }
    return m;
  }

 private:
  fs::path path_;
  int fd_ = -1;
  bool ok_ = false;
};

bool has_line(const std::string& text, const std::string& line) {
  std::istringstream in(text);
  std::string l;
  while (std::getline(in, l)) {
    if (l == line) return true;
  }
  return false;
}

TEST_F(Ready, NotifyProtocolReadyWatchdogStopping) {
  NotifySocket notify(base_ / "notify");
  ASSERT_TRUE(notify.ok()) << std::strerror(errno);
  // 256 MB of ring, locked in RAM where allowed (root): READY must not come before it is.
  const bool lock = ::geteuid() == 0;
  // The writer stalls for 3 s once 1 MiB is written; the watchdog is 1 s (pings every 0.5 s).
  std::vector<std::string> argv = {
      "/bin/sh", "-c",
      // WATCHDOG_PID must be the daemon's PID: the shell's, which exec keeps.
      "export NOTIFY_SOCKET=\"$1\" WATCHDOG_USEC=1000000 WATCHDOG_PID=$$; shift; exec \"$0\" "
      "\"$@\"",
      DDFT_RECEIVE_BIN, (base_ / "notify").string(), "--listen", listen(), "--output",
      out_.string(), "--buffer-mb", "256", "--socket-buffer-mb", "32", "--test-stall-writer-s", "3",
      "--test-stall-after-mb", "1"};
  if (lock) argv.push_back("--lock-memory");
  receiver_ = std::make_unique<Process>(argv, base_ / "receive.log");
  const pid_t pid = receiver_->pid();

  // Up to READY=1: a status line while the ring is prepared, nothing else (no ping either).
  std::optional<NotifySocket::Message> m;
  std::vector<std::string> before;
  while ((m = notify.next(seconds(20))) && !has_line(m->text, "READY=1")) before.push_back(m->text);
  ASSERT_TRUE(m) << "no READY=1 within 20 s; log: " << rx_log();
  // What READY=1 promises, checked the moment it arrives: the ring is in RAM (resident, and
  // locked with --lock-memory), the port is bound, and a datagram sent now is received.
  const long rss_kb = status_kb(pid, "VmRSS");
  const long locked_kb = status_kb(pid, "VmLck");
  const bool bound = udp_port_bound(port_);
  {
    const int s = ::socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port_);
    const char junk[] = "not a ddft datagram";
    ::sendto(s, junk, sizeof junk, 0, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::close(s);
  }
  EXPECT_GE(rss_kb, 240 * 1024) << "the ring was not populated before READY=1";
  if (lock && !kAddressSanitizer) {
    // (The ring is what --lock-memory locks: 256 MB less the 64 MiB of write blocks.)
    // AddressSanitizer intercepts mlock() and does nothing: nothing to see under it.
    EXPECT_GE(locked_kb, 190 * 1024) << "the ring was not locked before READY=1";
  }
  EXPECT_TRUE(bound) << "READY=1 before the port was bound";
  EXPECT_TRUE(has_line(m->text, "STATUS=receiving on " + listen())) << m->text;
  EXPECT_NE(rx_log().find("receiving on " + listen()), std::string::npos)
      << "READY=1 before the `receiving on` line: " << rx_log();
  // Sent from a thread of the daemon, but with the daemon's PID: NotifyAccess=main accepts it.
  EXPECT_EQ(m->pid, pid);
  ASSERT_EQ(before.size(), 1u);
  EXPECT_EQ(before[0], "STATUS=starting: preparing the receive buffer (256 MB)");
  EXPECT_TRUE(soon(
      [&] { return rx_log().find("dropped a damaged or foreign datagram") != std::string::npos; },
      seconds(5)))
      << "the datagram sent at READY=1 was not received: " << rx_log();

  // Pings while both loops run: every 0.5 s, 1 s at the most here.
  std::vector<steady_clock::time_point> pings;
  auto collect = [&](milliseconds span) {
    const auto end = steady_clock::now() + span;
    while (steady_clock::now() < end) {
      auto msg =
          notify.next(duration_cast<milliseconds>(end - steady_clock::now()) + milliseconds(1));
      if (!msg) continue;
      EXPECT_EQ(msg->pid, pid);
      if (has_line(msg->text, "WATCHDOG=1")) pings.push_back(msg->at);
    }
  };
  collect(milliseconds(2200));
  ASSERT_GE(pings.size(), 3u) << rx_log();
  for (size_t i = 1; i < pings.size(); ++i) {
    EXPECT_LT(pings[i] - pings[i - 1], milliseconds(1500)) << "ping " << i;
  }

  // The writer stalls for 3 s on the first MiB of a file: the pings stop meanwhile (the ingest
  // thread still runs), and come back after.
  fs::create_directories(base_ / "src");
  write_pattern(base_ / "src" / "stall.bin", 8 << 20, 7);
  const size_t before_stall = pings.size();
  ASSERT_EQ(send({(base_ / "src" / "stall.bin").string()}), 0) << tx_log();
  collect(milliseconds(5000));
  milliseconds longest{0};
  for (size_t i = before_stall; i < pings.size(); ++i) {
    longest = std::max(longest, duration_cast<milliseconds>(pings[i] - pings[i - 1]));
  }
  std::cout << "longest gap between pings, the writer stalled for 3 s: " << longest.count()
            << " ms\n";
  EXPECT_GE(longest, milliseconds(2500)) << "the pings went on while the writer was stalled";
  // ... and they came back: the last one is recent.
  EXPECT_LT(steady_clock::now() - pings.back(), milliseconds(1500)) << "no ping after the stall";
  EXPECT_TRUE(
      soon([&] { return rx_log().find("File: stall.bin") != std::string::npos; }, seconds(10)))
      << rx_log();
  EXPECT_NE(rx_log().find("B2B Passed"), std::string::npos) << rx_log();

  // SIGTERM: STOPPING=1 at once, then a clean exit.
  receiver_->signal(SIGTERM);
  bool stopping = false;
  while (!stopping && (m = notify.next(seconds(10)))) stopping = has_line(m->text, "STOPPING=1");
  EXPECT_TRUE(stopping) << rx_log();
  EXPECT_EQ(receiver_->wait(seconds(30)), 0) << rx_log();
}

// Without NOTIFY_SOCKET nothing is sent and nothing is logged about it: every other test runs so.
TEST_F(Ready, WithoutNotifySocketNothingAboutTheServiceManager) {
  receiver_ = std::make_unique<Process>(
      std::vector<std::string>{"/usr/bin/env", "-u", "NOTIFY_SOCKET", "WATCHDOG_USEC=1000000",
                               DDFT_RECEIVE_BIN, "--listen", listen(), "--output", out_.string(),
                               "--buffer-mb", "128"},
      base_ / "receive.log");
  ASSERT_TRUE(soon([&] { return rx_log().find("receiving on") != std::string::npos; }, seconds(20)))
      << rx_log();
  receiver_->signal(SIGTERM);
  EXPECT_EQ(receiver_->wait(seconds(30)), 0);
  EXPECT_EQ(rx_log().find("service manager"), std::string::npos) << rx_log();
}

}  // namespace
}  // namespace ddft::testing
