// The sender's seams: ListSource gives a command line's files in order and stops on request;
// ObserverList passes every callback to each observer in the order they were added; a
// SendObserver's file_sent_via() is its file_sent() unless overridden.
#include "sender/events.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sender/pipeline.hpp"

namespace ddft::sender {
namespace {

SourceFile file(const std::string& rel) {
  SourceFile f;
  f.path = "/src/" + rel;
  f.rel_path = rel;
  return f;
}

using FilesBytes = std::pair<uint64_t, uint64_t>;

TEST(ListSource, GivesTheFilesInOrderThenNothing) {
  std::vector<SourceFile> files = {file("a"), file("b/c")};
  files[0].size = 100;
  files[1].size = 20;
  ListSource src(files);
  EXPECT_EQ(src.describe(), "2 file(s)");
  // What is left: its files and listed bytes; since when, a list cannot tell.
  const auto left = [&src] {
    const std::optional<Backlog> b = src.backlog();
    EXPECT_TRUE(b.has_value());
    EXPECT_FALSE(b && b->oldest.has_value());
    return b ? FilesBytes(b->files, b->bytes) : FilesBytes(99, 99);
  };
  EXPECT_EQ(left(), FilesBytes(2, 120));
  std::stop_source stop;
  auto first = src.next(stop.get_token());
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->rel_path, "a");
  EXPECT_EQ(left(), FilesBytes(1, 20));
  auto second = src.next(stop.get_token());
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->path, "/src/b/c");
  EXPECT_EQ(src.next(stop.get_token()), std::nullopt);
  EXPECT_EQ(left(), FilesBytes(0, 0));
}

TEST(ListSource, AStopEndsTheSession) {
  const std::vector<SourceFile> files = {file("a")};
  ListSource src(files);
  std::stop_source stop;
  stop.request_stop();
  EXPECT_EQ(src.next(stop.get_token()), std::nullopt);
}

// Writes each callback it gets as one line, prefixed with its name.
class Recorder final : public SendObserver {
 public:
  Recorder(std::string name, std::vector<std::string>* log) : name_(std::move(name)), log_(log) {}
  void session_started(uint64_t id) override { put("session_started " + std::to_string(id)); }
  void file_started(const FileMeta& f) override { put("file_started " + f.rel_path); }
  void file_progress(const FileMeta& f, uint64_t sent) override {
    put("file_progress " + f.rel_path + " " + std::to_string(sent));
  }
  void file_sent(const FileMeta& f, const common::Digest& d) override {
    put("file_sent " + f.rel_path + " " + std::to_string(d.size));
  }
  void file_failed(const FileMeta& f, const std::string& reason) override {
    put("file_failed " + f.rel_path + " " + reason);
  }
  void idle() override { put("idle"); }
  void session_finished(uint64_t id) override { put("session_finished " + std::to_string(id)); }

 private:
  void put(const std::string& line) { log_->push_back(name_ + ": " + line); }
  std::string name_;
  std::vector<std::string>* log_;
};

TEST(ObserverList, PassesEveryCallbackToEachInTheOrderAdded) {
  std::vector<std::string> log;
  Recorder a("a", &log), b("b", &log);
  ObserverList list;
  EXPECT_TRUE(list.empty());
  list.add(&a);
  list.add(&b);
  EXPECT_FALSE(list.empty());
  FileMeta f;
  f.rel_path = "x.bin";
  common::Digest d;
  d.size = 4;
  list.session_started(7);
  list.file_started(f);
  list.file_progress(f, 100);
  list.file_sent(f, d);
  list.file_failed(f, "gone");
  list.idle();
  list.session_finished(7);
  const std::vector<std::string> want = {"a: session_started 7",
                                         "b: session_started 7",
                                         "a: file_started x.bin",
                                         "b: file_started x.bin",
                                         "a: file_progress x.bin 100",
                                         "b: file_progress x.bin 100",
                                         "a: file_sent x.bin 4",
                                         "b: file_sent x.bin 4",
                                         "a: file_failed x.bin gone",
                                         "b: file_failed x.bin gone",
                                         "a: idle",
                                         "b: idle",
                                         "a: session_finished 7",
                                         "b: session_finished 7"};
  EXPECT_EQ(log, want);
}

// The session calls file_sent_via(); an observer that overrides only file_sent() (as Recorder)
// still hears of every file sent, directly and through a list.
TEST(SendObserver, FileSentViaIsFileSentUnlessOverridden) {
  std::vector<std::string> log;
  Recorder a("a", &log), b("b", &log);
  FileMeta f;
  f.rel_path = "x.bin";
  common::Digest d;
  d.size = 4;
  a.file_sent_via(f, d, 2);
  ObserverList list;
  list.add(&a);
  list.add(&b);
  list.file_sent_via(f, d, common::kLaneAll);
  const std::vector<std::string> want = {"a: file_sent x.bin 4", "a: file_sent x.bin 4",
                                         "b: file_sent x.bin 4"};
  EXPECT_EQ(log, want);
}

}  // namespace
}  // namespace ddft::sender
