// The finisher on a real output folder: verification, commit and delivery, and failure records,
// with a test owner that records what it is told.
#include "receiver/assembly/finisher.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "support/scratch_fs.hpp"

namespace ddft::receiver {
namespace {
namespace fs = std::filesystem;

class FinisherTest : public ::testing::Test, public Finisher::Owner {
 protected:
  void SetUp() override {
    cfg_.write_mode = WriteMode::kBuffered;
    out_ = std::make_unique<OutputDir>(base_.string(), (base_ / ".failed").string(),
                                       CollisionPolicy::kRename);
    common::BlockIoOptions o;
    o.engine = common::IoEngine::kPwrite;
    io_ = common::make_block_io(o, nullptr);
    engine_ = std::make_unique<WriteEngine>(*io_, mem_, 4096);
    blocks_ = std::make_unique<FileBlocks>(*engine_);
    records_ = std::make_unique<FailureRecords>(*out_, pool_, clock_, false, counters_);
    finisher_ = std::make_unique<Finisher>(cfg_, *out_, pool_, clock_, *engine_, *blocks_,
                                           *records_, counters_, *this);
  }
  void TearDown() override {
    settle();
    finisher_.reset();
  }
  void fail(File& f, const std::string& reason) override {
    failed_.push_back(reason);
    f.state = FileState::kFailing;
    f.fail_reason = reason;
  }
  void end(File& f) override { ended_.push_back(f.path); }
  void passed(File& f) override { passed_.push_back(f.path); }
  SessionFiles* tally(uint64_t s) override { return s == 1 ? &session_files_ : nullptr; }

  // A file whose data `content` is written to its temporary file, with the sender's key.
  std::unique_ptr<File> written(const std::string& path, const std::string& content,
                                const std::string& key_of) {
    auto f = std::make_unique<File>();
    f->session = 1;
    f->id = 5;
    f->path = path;
    f->size = content.size();
    f->verify = common::VerifyType::kB2B;
    f->chunk_size = 1000;
    f->chunks_total = f->chunks_received = (content.size() + 999) / 1000;
    f->bitmap.assign(1, ~uint64_t{0});
    f->bytes_received = content.size();
    f->state = FileState::kEnding;
    f->end_seen = true;
    f->hash_stream = false;  // verified by reading it back
    std::string why;
    EXPECT_TRUE(out_->create_temp(path, temp_name(1, 5), &f->tmp, &why)) << why;
    EXPECT_EQ(::pwrite(f->tmp.fd.get(), content.data(), content.size(), 0),
              static_cast<ssize_t>(content.size()));
    const auto key = common::hash_buffer(
        f->verify, {reinterpret_cast<const uint8_t*>(key_of.data()), key_of.size()});
    f->end.key_len = key.size;
    f->end.key = key.bytes;
    f->end.size = content.size();
    f->end.copies = 1;
    f->tmp_ready = true;
    return f;
  }
  void settle() {
    for (int i = 0; i < 1000 && (pool_.pending() > 0 || finisher_->busy()); ++i) {
      pool_.wait(std::chrono::milliseconds(20));
      pool_.reap();
    }
  }
  testing::ScratchDir scratch_{"fi"};
  fs::path base_ = scratch_.path();
  ReceiverConfig cfg_;
  std::unique_ptr<OutputDir> out_;
  std::unique_ptr<common::BlockIo> io_;
  common::AlignedBuffer mem_{2 * 4096};
  FsPool pool_{2, "tfi"};
  common::FakeClock clock_;
  AssemblerCounters counters_;
  SessionFiles session_files_;
  std::unique_ptr<WriteEngine> engine_;
  std::unique_ptr<FileBlocks> blocks_;
  std::unique_ptr<FailureRecords> records_;
  std::unique_ptr<Finisher> finisher_;
  std::vector<std::string> failed_;
  std::vector<std::string> ended_;
  std::vector<std::string> passed_;
};

TEST_F(FinisherTest, AVerifiedFileIsCommittedDeliveredAndEnded) {
  std::vector<DeliveredFile> delivered;
  finisher_->set_on_delivered([&](const DeliveredFile& d) { delivered.push_back(d); });
  auto f = written("ok.bin", "hello world", "hello world");
  finisher_->finish(*f);
  settle();
  EXPECT_TRUE(failed_.empty());
  ASSERT_EQ(ended_.size(), 1u);
  EXPECT_EQ(passed_, std::vector<std::string>{"ok.bin"}) << "the owner hears it passed";
  EXPECT_TRUE(fs::exists(base_ / "ok.bin"));
  EXPECT_EQ(counters_.files_passed, 1u);
  EXPECT_EQ(session_files_.passed, 1u);
  ASSERT_EQ(delivered.size(), 1u);
  EXPECT_EQ(delivered[0].file.path, "ok.bin");
  EXPECT_EQ(delivered[0].file.size, 11u);
}

TEST_F(FinisherTest, AMismatchFailsAndTheRecordEndsTheFile) {
  auto f = written("bad.bin", "hello world", "something else");
  finisher_->finish(*f);
  settle();
  ASSERT_EQ(failed_.size(), 1u);
  EXPECT_EQ(failed_[0].rfind("verification failed: sender key ", 0), 0u) << failed_[0];
  EXPECT_TRUE(ended_.empty()) << "failing is the owner's call";
  finisher_->record_failure(*f);
  settle();
  EXPECT_TRUE(f->record_posted);
  ASSERT_EQ(ended_.size(), 1u);
  EXPECT_TRUE(passed_.empty());
  EXPECT_EQ(counters_.files_failed, 1u);
  EXPECT_FALSE(fs::exists(base_ / "bad.bin"));
  EXPECT_FALSE(fs::is_empty(base_ / ".failed"));
}

}  // namespace
}  // namespace ddft::receiver
