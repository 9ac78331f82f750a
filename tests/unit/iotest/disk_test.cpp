// The read self-test reads in the sender's block size, without knowing the sender.
#include "iotest/disk.hpp"

#include <gtest/gtest.h>

#include "sender/pipeline.hpp"

namespace ddft::iotest {
namespace {

TEST(ReadBlockBytes, IsTheSendersReaderBlockAtItsDefaults) {
  for (unsigned kb : {4u, 64u, 1024u, 4096u, 65536u}) {
    sender::SenderConfig cfg;
    cfg.read_block_kb = kb;
    EXPECT_EQ(read_block_bytes(kb), sender::reader_block_size(cfg)) << kb << " KB";
  }
}

}  // namespace
}  // namespace ddft::iotest
