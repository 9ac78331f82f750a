// Whether an announce is taken (admission.hpp): the filters drop a file as policy, a bad name is
// refused and recorded, and at the bound on files in flight the oldest receiving file gives way,
// unless failed files still being recorded fill the bound too.
#include "receiver/assembly/admission.hpp"

#include <gtest/gtest.h>

#include "receiver/assembly/file_rules.hpp"
#include "support/json_matchers.hpp"
#include "unit/receiver/assembly/table_fixture.hpp"

namespace ddft::receiver {
namespace {
using ddft::testing::JsonHas;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class AdmissionTest : public TablePartsTest {
 protected:
  // The announce of file `id` at `path` (1000 bytes) and the file it makes.
  std::unique_ptr<File> announced(uint32_t id, const std::string& path) {
    a_.file_id = id;
    a_.path = path;
    a_.size = 1000;
    a_.chunk_size = 1000;
    a_.verify = common::VerifyType::kB2B;
    return file_from_announce(a_, kSession, clock_.now(), 1 << 20);
  }
  Admission admission_{cfg_, out_, records_, counters_, session_files_, known_, files_};
  common::Announce a_;
};

TEST_F(AdmissionTest, AFilteredFileIsDroppedAndItsIdRemembered) {
  cfg_.filter = common::PathFilter({}, {"*.skip"});
  EXPECT_TRUE(admission_.filtered(*announced(3, "a.skip")));
  EXPECT_TRUE(known_.filtered(3));
  EXPECT_EQ(counters_.files_filtered, 1u);
  EXPECT_EQ(session_files_.filtered, 1u);
  EXPECT_FALSE(admission_.filtered(*announced(4, "a.keep")));
  EXPECT_FALSE(admission_.filtered(*announced(5, "../a.skip")))
      << "a hostile name is refused as such, not filtered";
  EXPECT_TRUE(records().empty()) << "filtering is policy: no record";
}

TEST_F(AdmissionTest, ABadNameIsRefusedAndRecorded) {
  const std::unique_ptr<File> f = announced(3, "../escape.bin");
  File* evict = nullptr;
  const std::optional<std::string> why = admission_.refusal(a_, *f, &evict);
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(evict, nullptr);
  admission_.refuse(*f, *why);
  EXPECT_EQ(counters_.files_refused, 1u);
  EXPECT_EQ(session_files_.refused, 1u);
  EXPECT_THAT(records(), ElementsAre(JsonHas("reason", "refused: " + *why)));
}

TEST_F(AdmissionTest, AtTheBoundTheOldestReceivingFileGivesWay) {
  cfg_.max_files_in_flight = 2;
  File& oldest = add_file(1, "one.bin");
  later(1);
  add_file(2, "two.bin").announced = clock_.now();
  add_file(3, "three.bin", FileState::kEnding);  // all its data in: never the one to go
  const std::unique_ptr<File> f = announced(4, "four.bin");
  File* evict = nullptr;
  EXPECT_EQ(admission_.refusal(a_, *f, &evict), std::nullopt);
  EXPECT_EQ(evict, &oldest);
  EXPECT_EQ(counters_.files_evicted, 1u);
  EXPECT_THAT(admission_.evict_reason(), HasSubstr("more than 2 files in flight"));
}

// Another sender's file is older, but the sender with the most files receiving gives way.
TEST_F(AdmissionTest, AtTheBoundTheSenderWithTheMostFilesGivesWay) {
  cfg_.max_files_in_flight = 3;
  constexpr uint64_t kOther = kSession + 1;
  auto other = std::make_unique<File>();
  other->session = kOther;
  other->id = 1;
  other->path = "other.bin";
  other->state = FileState::kReceiving;
  other->announced = clock_.now();
  files_[{kOther, 1}] = std::move(other);
  later(1);
  File& oldest_here = add_file(1, "one.bin");
  oldest_here.announced = clock_.now();
  later(1);
  add_file(2, "two.bin").announced = clock_.now();
  const std::unique_ptr<File> f = announced(3, "three.bin");
  File* evict = nullptr;
  EXPECT_EQ(admission_.refusal(a_, *f, &evict), std::nullopt);
  EXPECT_EQ(evict, &oldest_here) << "not the other sender's, though it is older";
}

TEST_F(AdmissionTest, FailedFilesStillBeingRecordedAtTheBoundRefuseANewOne) {
  cfg_.max_files_in_flight = 2;
  add_file(1, "one.bin");
  add_file(2, "two.bin");
  add_file(3, "three.bin", FileState::kFailing);
  add_file(4, "four.bin", FileState::kFailing);
  const std::unique_ptr<File> f = announced(5, "five.bin");
  File* evict = nullptr;
  EXPECT_EQ(admission_.refusal(a_, *f, &evict),
            "2 failed files are still being recorded (the disk is not keeping up)");
  EXPECT_EQ(evict, nullptr);
  EXPECT_EQ(counters_.files_evicted, 0u);
}

}  // namespace
}  // namespace ddft::receiver
