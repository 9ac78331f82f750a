// DeliveredFile is plain data: what a new one holds, and that it copies and moves whole (the
// hook runner keeps copies while the assembler goes on).
#include "receiver/delivery/delivered_file.hpp"

#include <gtest/gtest.h>

#include <utility>

namespace ddft::receiver {
namespace {

TEST(DeliveredFile, StartsEmpty) {
  const DeliveredFile f;
  EXPECT_EQ(f.final_path, "");
  EXPECT_EQ(f.file.path, "");
  EXPECT_EQ(f.file.size, 0u);
  EXPECT_EQ(f.key, "");
  EXPECT_EQ(f.file.session, 0u);
  EXPECT_EQ(f.displaced_to, "") << "no earlier file of the same name";
}

TEST(DeliveredFile, CopiesAndMovesWhole) {
  DeliveredFile f{{0xABCDEF, 7, "a/b.bin", 1234, common::VerifyType::kB2B, "6999cf78"},
                  "/srv/in/a/b.bin",
                  "0x6999CF78",
                  "/srv/in/a/b.1.bin",
                  "alarms",
                  "00000000000a11ce",
                  {2, 5}};
  const DeliveredFile copy = f;
  const DeliveredFile moved = std::move(f);
  for (const DeliveredFile* d : {&copy, &moved}) {
    EXPECT_EQ(d->final_path, "/srv/in/a/b.bin");
    EXPECT_EQ(d->file, (common::FileIdentity{0xABCDEF, 7, "a/b.bin", 1234, common::VerifyType::kB2B,
                                             "6999cf78"}));
    EXPECT_EQ(d->key, "0x6999CF78");
    EXPECT_EQ(d->displaced_to, "/srv/in/a/b.1.bin");
    EXPECT_EQ(d->channel, "alarms");
    EXPECT_EQ(d->sender, "00000000000a11ce");
    EXPECT_EQ(d->repairs.fec_rebuilt, 2u);
    EXPECT_EQ(d->repairs.repeat_filled, 5u);
  }
}

}  // namespace
}  // namespace ddft::receiver
