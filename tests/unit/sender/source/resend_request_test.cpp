// Resend requests on the sending side: read whole or refused with one line naming the line, and
// each file found (retention first, then the sources given) only while its bytes are the ones
// first sent.
#include "sender/source/resend_request.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/hash.hpp"
#include "support/files.hpp"
#include "support/scratch_fs.hpp"

namespace ddft::sender {
namespace {
namespace fs = std::filesystem;
using ddft::testing::write_file;

std::string b2b(const std::string& content) {
  return common::hash_buffer(
             common::VerifyType::kB2B,
             std::span(reinterpret_cast<const uint8_t*>(content.data()), content.size()))
      .hex();
}

std::string line(uint64_t session, uint32_t id, const std::string& path, const std::string& c) {
  return "{\"sender\":null,\"session\":\"" + fmt::format("{:016x}", session) +
         "\",\"file_id\":" + std::to_string(id) + ",\"path\":\"" + path +
         "\",\"size\":" + std::to_string(c.size()) + ",\"verify\":\"B2B\",\"digest\":\"" + b2b(c) +
         "\"}";
}

class ResendRequestTest : public ::testing::Test {
 protected:
  fs::path req() const { return dir_.path() / "req.jsonl"; }
  testing::ScratchDir dir_{"resend_request"};
};

TEST_F(ResendRequestTest, ReadsEachLineAndRefusesABadOneWithItsNumber) {
  std::ofstream(req()) << line(0x5e55, 3, "a/b.bin", "abc") << "\n\n"
                       << line(0x5e55, 4, "c.bin", "xyz") << "\n";
  const std::vector<ResendRequest> rs = read_resend_requests(req().string());
  ASSERT_EQ(rs.size(), 2u);
  EXPECT_EQ(rs[0].file.session, 0x5e55u);
  EXPECT_EQ(rs[0].file.file_id, 3u);
  EXPECT_EQ(rs[0].file.path, "a/b.bin");
  EXPECT_EQ(rs[0].file.size, 3u);
  EXPECT_EQ(rs[0].file.digest, b2b("abc"));
  EXPECT_EQ(rs[0].sender_id, 0u);
  std::ofstream(req(), std::ios::app) << "{\"session\":\"5e55\",\"file_id\":0}\n";
  try {
    read_resend_requests(req().string());
    FAIL() << "a bad line was taken";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()),
              req().string() + ":4: not a resend request: \"file_id\" is not a file id");
  }
  EXPECT_THROW(read_resend_requests((dir_.path() / "none").string()), std::runtime_error);
}

TEST_F(ResendRequestTest, SendsWhatIsUnchangedFromRetentionOrTheSourcesAndNamesTheRest) {
  const fs::path retention = dir_.path() / "retention";
  write_file(retention / "0000000000005e55" / "1" / "kept.bin", "kept");
  write_file(dir_.path() / "src" / "same.bin", "same");
  write_file(dir_.path() / "src" / "grew.bin", "grew and more");
  std::vector<SourceFile> listed;
  for (const char* n : {"same.bin", "grew.bin"}) {
    SourceFile s;
    s.path = (dir_.path() / "src" / n).string();
    s.rel_path = n;
    listed.push_back(s);
  }
  std::ofstream(req()) << line(0x5e55, 1, "kept.bin", "kept") << "\n"
                       << line(0x5e55, 2, "same.bin", "same") << "\n"
                       << line(0x5e55, 3, "grew.bin", "grew") << "\n"
                       << line(0x5e55, 4, "gone.bin", "gone") << "\n";
  std::vector<SourceError> errors;
  const std::vector<SourceFile> out = resend_sources(read_resend_requests(req().string()), listed,
                                                     retention.string(), 0xfeed, &errors);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].path, (retention / "0000000000005e55" / "1" / "kept.bin").string());
  EXPECT_EQ(out[0].rel_path, "kept.bin");
  ASSERT_TRUE(out[0].resend_of);
  EXPECT_EQ(out[0].resend_of->file_id, 1u);
  EXPECT_EQ(out[1].rel_path, "same.bin");
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_NE(errors[0].message.find("\"grew.bin\" (session 0000000000005e55, file 3): "),
            std::string::npos)
      << errors[0].message;
  EXPECT_NE(errors[0].message.find("its bytes changed; not sent"), std::string::npos)
      << errors[0].message;
  EXPECT_NE(errors[1].message.find("not in the retention folder nor under the sources given"),
            std::string::npos)
      << errors[1].message;
}

TEST_F(ResendRequestTest, FindsAFileInAFolderOfSentFilesGivenAsASource) {
  // A hot folder's --sent-dir given as a source: its files are listed under the folder's name,
  // and a name taken there got a number. The copy is opened as its listing allows (no link
  // followed below the folder given).
  write_file(dir_.path() / "sent" / "d" / "a.txt", "first version");
  write_file(dir_.path() / "sent" / "d" / "a.1.txt", "second");
  std::vector<SourceFile> listed;
  for (const char* n : {"sent/d/a.txt", "sent/d/a.1.txt"}) {
    SourceFile s;
    s.path = (dir_.path() / n).string();
    s.rel_path = n;
    s.root = (dir_.path() / "sent").string();
    s.below = std::string(n).substr(5);
    listed.push_back(s);
  }
  std::ofstream(req()) << line(0x5e55, 9, "d/a.txt", "second") << "\n";
  std::vector<SourceError> errors;
  const std::vector<SourceFile> out =
      resend_sources(read_resend_requests(req().string()), listed, "", 0, &errors);
  EXPECT_TRUE(errors.empty()) << errors.front().message;
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].path, (dir_.path() / "sent/d/a.1.txt").string());
  EXPECT_EQ(out[0].rel_path, "d/a.txt");
  EXPECT_EQ(out[0].root, (dir_.path() / "sent").string());
  EXPECT_EQ(out[0].below, "d/a.1.txt");
}

}  // namespace
}  // namespace ddft::sender
