// StallingIo: the test hook wraps a real write engine and passes every request through to it,
// whole; it says it is there in describe(). (Stalls of zero seconds: no timing is asserted.)
#include "receiver/delivery/stall_hook.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "common/fd.hpp"
#include "support/scratch_fs.hpp"

namespace ddft::receiver {
namespace {

TEST(StallingIo, PassesWritesReadsAndSyncsThroughToTheRealEngine) {
  testing::ScratchDir dir("stall_hook");
  common::BlockIoOptions opt;
  opt.engine = common::IoEngine::kPwrite;
  opt.queue_depth = 4;
  std::string note;
  auto inner = common::make_block_io(opt, &note);
  const std::string inner_name = inner->describe();
  StallingIo io(std::move(inner), 0.0, 4096);  // "stalls" (0 s) once 4 KiB were written
  EXPECT_EQ(io.describe(), inner_name + " (test stall hook)");
  EXPECT_EQ(io.capacity(), 4u);

  const std::string path = (dir.path() / "f").string();
  common::UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  ASSERT_TRUE(fd.valid());
  std::vector<uint8_t> a(4096, 'a'), b(100, 'b'), back(4196, 0);
  ASSERT_TRUE(io.submit_write(fd.get(), a.data(), a.size(), 0, 1));
  ASSERT_TRUE(io.submit_write(fd.get(), b.data(), b.size(), 4096, 2));  // after the stall
  std::vector<common::IoCompletion> done;
  auto collect = [&](const common::IoCompletion& c) { done.push_back(c); };
  for (int i = 0; i < 100 && done.size() < 2; ++i) io.reap(true, collect);
  ASSERT_EQ(done.size(), 2u);
  ASSERT_TRUE(io.submit_sync(fd.get(), true, 3));
  ASSERT_TRUE(io.submit_read(fd.get(), back.data(), back.size(), 0, 4));
  for (int i = 0; i < 100 && done.size() < 4; ++i) io.reap(true, collect);
  ASSERT_EQ(done.size(), 4u);
  EXPECT_EQ(io.in_flight(), 0u);
  for (const auto& c : done) EXPECT_EQ(c.error, 0) << c.cookie;
  EXPECT_EQ(done[3].bytes, 4196u);
  EXPECT_EQ(std::string(back.begin(), back.begin() + 4096), std::string(4096, 'a'));
  EXPECT_EQ(std::string(back.begin() + 4096, back.end()), std::string(100, 'b'));
}

}  // namespace
}  // namespace ddft::receiver
