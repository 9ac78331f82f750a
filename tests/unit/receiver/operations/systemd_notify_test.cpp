// The receiver's systemd notification: when the watchdog gate lets a ping through (FakeClock, no
// real time), and what ServiceNotifier sends on a real AF_UNIX datagram socket standing in for
// the service manager's NOTIFY_SOCKET.
#include "receiver/operations/systemd_notify.hpp"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>

#include "support/scratch_fs.hpp"

namespace ddft::receiver {
namespace {
using namespace std::chrono_literals;

TEST(WatchdogGate, NoIntervalNeverPings) {
  common::FakeClock clock;
  WatchdogGate gate(0us);
  EXPECT_FALSE(gate.due(clock.now(), 1, 1));
  clock.advance(1h);
  EXPECT_FALSE(gate.due(clock.now(), 100, 100));
}

TEST(WatchdogGate, PingsAtHalfTheIntervalWhileBothLoopsPass) {
  common::FakeClock clock;
  WatchdogGate gate(10s);
  EXPECT_FALSE(gate.due(clock.now(), 0, 0)) << "neither loop has run yet";
  EXPECT_FALSE(gate.due(clock.now(), 1, 0)) << "the writer loop has not run yet";
  EXPECT_TRUE(gate.due(clock.now(), 1, 1)) << "the first ping is due as soon as both ran";
  clock.advance(4999ms);
  EXPECT_FALSE(gate.due(clock.now(), 50, 50)) << "before half the interval";
  clock.advance(1ms);
  EXPECT_TRUE(gate.due(clock.now(), 51, 51));
  clock.advance(5s);
  EXPECT_TRUE(gate.due(clock.now(), 52, 52));
}

TEST(WatchdogGate, EitherLoopStuckWithholdsThePingUntilItPassesAgain) {
  common::FakeClock clock;
  WatchdogGate gate(2s);
  ASSERT_TRUE(gate.due(clock.now(), 10, 10));
  // The writer is stuck (its count stays at 10) while the ingest loop goes on.
  for (int i = 1; i <= 10; ++i) {
    clock.advance(250ms);
    EXPECT_FALSE(gate.due(clock.now(), 10 + static_cast<uint64_t>(i), 10)) << i;
  }
  // It comes round once: the ping goes at once, half an interval having long passed.
  EXPECT_TRUE(gate.due(clock.now(), 21, 11));
  // Now the ingest loop is stuck.
  clock.advance(5s);
  EXPECT_FALSE(gate.due(clock.now(), 21, 30));
  EXPECT_TRUE(gate.due(clock.now(), 22, 31));
}

// The service manager's end: an AF_UNIX datagram socket in a temp folder, named by NOTIFY_SOCKET
// (and WATCHDOG_USEC) for as long as it lives.
class FakeManager {
 public:
  explicit FakeManager(const char* watchdog_usec) {
    const std::string path = (dir_.path() / "notify").string();
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    bound_ = fd_ >= 0 && ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    ::setenv("NOTIFY_SOCKET", path.c_str(), 1);
    if (watchdog_usec != nullptr) {
      ::setenv("WATCHDOG_USEC", watchdog_usec, 1);
      ::setenv("WATCHDOG_PID", std::to_string(::getpid()).c_str(), 1);
    }
  }
  ~FakeManager() {
    ::unsetenv("NOTIFY_SOCKET");
    ::unsetenv("WATCHDOG_USEC");
    ::unsetenv("WATCHDOG_PID");
    if (fd_ >= 0) ::close(fd_);
  }
  bool bound() const { return bound_; }
  // The next message already sent, if any (sd_notify has returned: it is in the socket).
  std::optional<std::string> take() {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 0) != 1) return std::nullopt;
    char buf[4096];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n < 0) return std::nullopt;
    return std::string(buf, static_cast<size_t>(n));
  }

 private:
  testing::ScratchDir dir_{"notify"};
  int fd_ = -1;
  bool bound_ = false;
};

TEST(ServiceNotifier, WithoutNotifySocketIsOff) {
  ::unsetenv("NOTIFY_SOCKET");
  common::FakeClock clock;
  ServiceNotifier n(clock);
  EXPECT_FALSE(n.enabled());
  EXPECT_EQ(n.watchdog_interval(), 0us);
  n.on_receiving("127.0.0.1:1");  // nowhere to send to: nothing happens
  n.on_tick({1, 1, 0, 0});
  n.stopping();
}

TEST(ServiceNotifier, ReadyStatusAndStoppingOnce) {
  FakeManager manager(nullptr);
  ASSERT_TRUE(manager.bound());
  common::FakeClock clock;
  ServiceNotifier n(clock);
  EXPECT_TRUE(n.enabled());
  EXPECT_EQ(n.watchdog_interval(), 0us);
  n.status("starting");
  EXPECT_EQ(manager.take(), "STATUS=starting");
  n.on_tick({1, 1, 0, 0});
  EXPECT_EQ(manager.take(), std::nullopt) << "nothing before READY=1";
  n.on_receiving("127.0.0.1:5000");
  EXPECT_EQ(manager.take(), "READY=1\nSTATUS=receiving on 127.0.0.1:5000");
  // No watchdog set: ticks send only a changed count, at most once a second.
  clock.advance(2s);
  n.on_tick({2, 2, 0, 0});
  EXPECT_EQ(manager.take(), std::nullopt);
  n.on_tick({3, 3, 4, 1});
  EXPECT_EQ(manager.take(), "STATUS=receiving on 127.0.0.1:5000; 4 file(s) passed, 1 failed");
  clock.advance(500ms);
  n.on_tick({4, 4, 5, 1});
  EXPECT_EQ(manager.take(), std::nullopt) << "within a second of the last status";
  clock.advance(500ms);
  n.on_tick({5, 5, 5, 1});
  EXPECT_EQ(manager.take(), "STATUS=receiving on 127.0.0.1:5000; 5 file(s) passed, 1 failed");
  n.stopping();
  EXPECT_EQ(manager.take(), "STOPPING=1\nSTATUS=stopping: writing what the buffer holds");
  n.stopping();
  EXPECT_EQ(manager.take(), std::nullopt) << "STOPPING=1 is sent once";
}

TEST(ServiceNotifier, WatchdogPingsFollowTheGate) {
  FakeManager manager("4000000");
  ASSERT_TRUE(manager.bound());
  common::FakeClock clock;
  ServiceNotifier n(clock);
  EXPECT_EQ(n.watchdog_interval(), 4s);
  n.on_receiving("device /dev/diode0");
  EXPECT_EQ(manager.take(), "READY=1\nSTATUS=receiving on device /dev/diode0");
  n.on_tick({1, 1, 0, 0});
  EXPECT_EQ(manager.take(), "WATCHDOG=1");
  // The writer is stuck from here (its count stays at 1).
  clock.advance(1s);
  n.on_tick({2, 1, 0, 0});
  EXPECT_EQ(manager.take(), std::nullopt) << "before half the interval";
  clock.advance(1s);
  n.on_tick({3, 1, 0, 0});
  EXPECT_EQ(manager.take(), std::nullopt) << "the writer did not come round";
  clock.advance(250ms);
  n.on_tick({4, 2, 2, 0});
  EXPECT_EQ(manager.take(),
            "WATCHDOG=1\nSTATUS=receiving on device /dev/diode0; 2 file(s) passed, 0 failed");
}

// A watchdog meant for another process (WATCHDOG_PID not ours) is not this one's.
TEST(ServiceNotifier, WatchdogOfAnotherPidIsIgnored) {
  FakeManager manager("4000000");
  ::setenv("WATCHDOG_PID", std::to_string(::getpid() + 1).c_str(), 1);
  common::FakeClock clock;
  ServiceNotifier n(clock);
  EXPECT_TRUE(n.enabled());
  EXPECT_EQ(n.watchdog_interval(), 0us);
}

}  // namespace
}  // namespace ddft::receiver
