// The fixture of the assembler's tests (assembler_*_test.cpp, one file per behaviour): the
// receive core driven with datagrams the test builds, a fake clock and a real scratch folder, on
// every write engine the receiver can use (the Engines instantiation in
// assembler_delivery_test.cpp). It lives in ddft::receiver, not in an anonymous namespace: the
// test files share one fixture type.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common/aligned_buffer.hpp"
#include "common/block_io.hpp"
#include "common/clock.hpp"
#include "common/fd.hpp"
#include "receiver/assembly/assembler.hpp"
#include "support/engines.hpp"
#include "support/files.hpp"
#include "support/host_probe.hpp"
#include "support/json_matchers.hpp"
#include "support/scratch_fs.hpp"

namespace ddft::receiver {

// Each test runs on every engine the receiver can use: pwrite, io_uring from the writer thread,
// and io_uring spread over three IO threads (--writers 3), where completions arrive out of order.
class AssemblerTest : public ::testing::TestWithParam<ddft::testing::EngineParam> {
 protected:
  using Datagram = std::vector<uint8_t>;

  // `n` pseudo-random bytes from `seed`.
  static std::string pattern(size_t n, uint32_t seed) {
    std::string s(n, '\0');
    std::mt19937 rng(seed);
    for (auto& c : s) c = static_cast<char>(rng());
    return s;
  }

  void SetUp() override {
    std::filesystem::create_directories(base_ / "out");
    std::filesystem::create_directories(base_ / "outside");
    cfg_.output = (base_ / "out").string();
    cfg_.failed_dir = testing::failed_folder(base_ / "out").string();
    cfg_.write_block_kb = 64;
    cfg_.write_buffers = 8;
    cfg_.queue_depth = 4;
    cfg_.file_timeout_s = 5;
    cfg_.report_mb = 1;
    if (const std::string why = ddft::testing::engine_missing(GetParam().engine); !why.empty()) {
      GTEST_SKIP() << why;
    }
    build();
  }
  void TearDown() override { asm_.reset(); }
  // A new assembler (and output folder and writer) on cfg_, as a receiver start makes one.
  void build() {
    asm_.reset();
    writer_.reset();
    out_ = std::make_unique<OutputDir>(cfg_.output, cfg_.failed_dir, cfg_.on_collision);
    mem_ = common::AlignedBuffer(cfg_.write_buffers * cfg_.write_block_kb * 1024);
    // The host has the engine (SetUp): a refusal throws, and fails the test.
    common::BlockIoOptions io;
    io.engine = GetParam().engine;
    io.threads = GetParam().threads;
    io.queue_depth = cfg_.queue_depth;
    io.fixed = mem_.span();
    writer_ = common::make_block_io(io, nullptr);
    asm_ = std::make_unique<Assembler>(cfg_, *out_, *writer_, mem_, clock_);
  }
  void feed(const Datagram& d) { asm_->on_datagram(d, d.size()); }
  void feed(const std::vector<Datagram>& ds) {
    for (const auto& d : ds) feed(d);
  }
  // Until no write is in flight, then one more round of the assembler's checks.
  void settle() {
    for (int i = 0; i < 1000 && asm_->io_pending(); ++i) asm_->poll(true);
    asm_->poll(false);
  }
  // The failure records written.
  std::vector<std::filesystem::path> records() { return testing::failed_records(base_ / "out"); }
  // The texts of the failure records whose "name" is `name`.
  std::vector<std::string> records_naming(const std::string& name) {
    std::vector<std::string> out;
    for (std::string& text : testing::failed_record_texts(base_ / "out")) {
      if (::testing::Value(text, testing::JsonHas("name", name))) out.push_back(std::move(text));
    }
    return out;
  }

  // The receiver's journal in its state folder, given to the assembler (before any datagram).
  OutcomeLog& use_journal() {
    journal_ = std::make_unique<OutcomeLog>(out_->state_fd());
    asm_->set_earlier(journal_.get(), {});
    return *journal_;
  }
  // The journal's P line of `path`, if any.
  std::optional<Outcome> passed_line(const std::string& path) const {
    for (const Outcome& o : journal_->read_all()) {
      if (o.kind == Outcome::Kind::kPassed && o.file.path == path) return o;
    }
    return std::nullopt;
  }

  testing::ScratchDir scratch_{"as"};
  std::filesystem::path base_ = scratch_.path();
  ReceiverConfig cfg_;
  common::FakeClock clock_;
  std::unique_ptr<OutcomeLog> journal_;  // outlives asm_ (TearDown() resets asm_ first)
  std::unique_ptr<OutputDir> out_;
  common::AlignedBuffer mem_;
  std::unique_ptr<common::BlockIo> writer_;
  std::unique_ptr<Assembler> asm_;
};

}  // namespace ddft::receiver
