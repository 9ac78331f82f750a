// UniqueFd owns one descriptor (closed when it goes, handed over on move, given up by
// release()); read_up_to and write_all loop over short reads and writes, on a real pipe.
#include "common/fd.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <string>
#include <thread>

namespace ddft::common {
namespace {

bool is_open(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

struct Pipe {
  Pipe() {
    int fds[2];
    EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    r.reset(fds[0]);
    w.reset(fds[1]);
  }
  UniqueFd r, w;
};

TEST(UniqueFd, ClosesItsDescriptorWhenItGoes) {
  int raw = -1;
  {
    Pipe p;
    raw = p.r.get();
    EXPECT_TRUE(p.r.valid());
    EXPECT_TRUE(static_cast<bool>(p.r));
    EXPECT_TRUE(is_open(raw));
  }
  EXPECT_FALSE(is_open(raw));
  UniqueFd none;
  EXPECT_FALSE(none.valid());
  EXPECT_EQ(none.get(), -1);
}

TEST(UniqueFd, MoveHandsOverAndReleaseGivesUp) {
  Pipe p;
  const int raw = p.w.get();
  UniqueFd moved(std::move(p.w));
  EXPECT_EQ(moved.get(), raw);
  EXPECT_FALSE(p.w.valid());  // NOLINT(bugprone-use-after-move): the contract says empty
  UniqueFd assigned;
  assigned = std::move(moved);
  EXPECT_EQ(assigned.get(), raw);
  const int released = assigned.release();
  EXPECT_EQ(released, raw);
  EXPECT_FALSE(assigned.valid());
  EXPECT_TRUE(is_open(raw)) << "release() must not close";
  assigned.reset(released);  // owned again, and closed by reset()
  assigned.reset();
  EXPECT_FALSE(is_open(raw));
}

TEST(FdIo, WriteAllAndReadUpToMoveEveryByteThroughAPipe) {
  Pipe p;
  // More than a pipe holds (64 KiB): the writer blocks and the reader gets it in pieces.
  const std::string data(300'000, 'x');
  std::thread writer([&] {
    EXPECT_TRUE(write_all(p.w.get(), data));
    p.w.reset();
  });
  std::string got(data.size() + 10, '\0');
  const ssize_t n = read_up_to(p.r.get(), got.data(), got.size());
  writer.join();
  ASSERT_EQ(n, static_cast<ssize_t>(data.size())) << "stops at end of file";
  got.resize(static_cast<size_t>(n));
  EXPECT_EQ(got, data);
}

TEST(FdIo, ErrorsAreReported) {
  Pipe p;
  p.r.reset();  // nobody reads: writing raises EPIPE (SIGPIPE ignored for the test)
  signal(SIGPIPE, SIG_IGN);
  EXPECT_FALSE(write_all(p.w.get(), "abc"));
  char buf[4];
  EXPECT_EQ(read_up_to(-1, buf, sizeof buf), -1);
  EXPECT_TRUE(write_all(p.w.get(), ""));  // nothing to write is not an error
}

}  // namespace
}  // namespace ddft::common
