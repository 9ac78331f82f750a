// The hot folder on a real folder with real inotify, and a FakeClock for the settle time: the
// tests call poll() after moving the clock, so nothing depends on how fast this machine is.
#include "sender/source/hot_folder.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "support/files.hpp"
#include "support/host_probe.hpp"
#include "support/log_capture.hpp"
#include "support/scratch_fs.hpp"

namespace ddft::sender {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

using ddft::testing::read_file;
using ddft::testing::write_file;

std::vector<std::string> names(const std::vector<SourceFile>& v) {
  std::vector<std::string> out;
  for (const auto& f : v) out.push_back(f.rel_path);
  return out;
}

class HotFolderTest : public ::testing::Test {
 protected:
  static constexpr auto kSettle = 5s;
  void SetUp() override {
    fs::create_directories(dir_);
    fs::create_directories(sent_);
  }
  void TearDown() override { hf_.reset(); }
  HotFolderOptions opts() {
    HotFolderOptions o;
    o.dir = dir_.string();
    o.settle_s = 5;
    return o;
  }
  void start(HotFolderOptions o) { hf_ = std::make_unique<HotFolder>(std::move(o), clock_); }
  void start() { start(opts()); }
  // Every file ready now; the FileMeta the reader would make for each is kept for sent().
  std::vector<SourceFile> drain() { return drain(*hf_); }
  std::vector<SourceFile> drain(HotFolder& hf) {
    std::vector<SourceFile> out;
    while (auto f = hf.poll()) {
      // As the reader does: the descriptor handed out, when there is one, else the path.
      struct stat st {};
      if (f->opened) {
        EXPECT_EQ(::fstat(f->opened->get(), &st), 0) << f->path;
      } else {
        EXPECT_EQ(::stat(f->path.c_str(), &st), 0) << f->path;
      }
      FileMeta m;
      m.rel_path = f->rel_path;
      m.src_path = f->path;
      m.size = static_cast<uint64_t>(st.st_size);
      m.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
      m.tag = f->tag;
      metas_[f->rel_path] = m;
      out.push_back(*f);
    }
    return out;
  }
  void sent(const std::string& rel) { sent(*hf_, rel); }
  void sent(HotFolder& hf, const std::string& rel) { hf.file_sent(metas_.at(rel), {}); }
  void failed(const std::string& rel) { hf_->file_failed(metas_.at(rel), "cannot read it"); }
  std::string journal() { return read_file(dir_ / ".ddft-watch-journal"); }

  testing::ScratchDir scratch_{"hot"};
  fs::path base_ = scratch_.path();
  fs::path dir_ = base_ / "outbox";
  fs::path sent_ = base_ / "sent";
  common::FakeClock clock_;
  std::unique_ptr<HotFolder> hf_;
  std::map<std::string, FileMeta> metas_;
};

TEST_F(HotFolderTest, FilesPresentAtStartAreSentOnceSettledThenDeletedAndFoldersTidied) {
  write_file(dir_ / "a.txt", "aaa");
  write_file(dir_ / "sub/deeper/b.txt", "bbb");
  start();
  EXPECT_TRUE(drain().empty());
  clock_.advance(kSettle - 1ms);
  EXPECT_TRUE(drain().empty());
  clock_.advance(1ms);
  const auto ready = drain();
  ASSERT_EQ(names(ready), (std::vector<std::string>{"a.txt", "sub/deeper/b.txt"}));
  EXPECT_EQ(ready[1].path, (fs::canonical(dir_) / "sub/deeper/b.txt").string());
  EXPECT_TRUE(fs::exists(dir_ / "a.txt")) << "nothing is removed before it is on the wire";
  sent("a.txt");
  sent("sub/deeper/b.txt");
  EXPECT_FALSE(fs::exists(dir_ / "a.txt"));
  EXPECT_FALSE(fs::exists(dir_ / "sub/deeper/b.txt"));
  // Recorded sent, then done, for each.
  const std::string j = journal();
  EXPECT_EQ(std::count(j.begin(), j.end(), '\n'), 5) << j;
  EXPECT_NE(j.find(" a.txt "), std::string::npos) << j;
  // Emptied folders go once quiet for the settle time; DIR itself stays.
  drain();
  EXPECT_TRUE(fs::exists(dir_ / "sub/deeper"));
  clock_.advance(kSettle);
  drain();
  EXPECT_FALSE(fs::exists(dir_ / "sub"));
  EXPECT_TRUE(fs::is_directory(dir_));
  EXPECT_EQ(hf_->files_removed(), 2u);
}

TEST_F(HotFolderTest, AFolderThatGetsANewFileIsNotRemoved) {
  write_file(dir_ / "sub/a", "1");
  start();
  clock_.advance(kSettle);
  ASSERT_EQ(names(drain()), std::vector<std::string>{"sub/a"});
  sent("sub/a");
  clock_.advance(kSettle - 1s);
  write_file(dir_ / "sub/b", "2");
  drain();
  clock_.advance(kSettle);
  EXPECT_EQ(names(drain()), std::vector<std::string>{"sub/b"});
  EXPECT_TRUE(fs::exists(dir_ / "sub/b"));
}

TEST_F(HotFolderTest, NewSubfoldersAreWatchedAndScanned) {
  start();
  // Made and filled before the hot folder has read a single event: found by the scan of "new".
  write_file(dir_ / "new/deep/x.bin", "x");
  drain();
  clock_.advance(kSettle);
  EXPECT_EQ(names(drain()), std::vector<std::string>{"new/deep/x.bin"});
  // Watched now: a later file there is seen by its events.
  write_file(dir_ / "new/deep/y.bin", "y");
  drain();
  clock_.advance(kSettle);
  EXPECT_EQ(names(drain()), std::vector<std::string>{"new/deep/y.bin"});
}

TEST_F(HotFolderTest, AFolderMovedWithinTheTreeIsFollowedAndItsNeighboursStayWatched) {
  fs::create_directories(dir_ / "a/deep");
  fs::create_directories(dir_ / "a-b");  // sorts between "a" and "a/deep"
  start();
  fs::rename(dir_ / "a", dir_ / "c");
  drain();
  write_file(dir_ / "c/deep/y", "y");
  write_file(dir_ / "a-b/z", "z");
  drain();
  clock_.advance(kSettle);
  EXPECT_EQ(names(drain()), (std::vector<std::string>{"a-b/z", "c/deep/y"}));
  write_file(dir_ / "c/deep/w", "w");
  drain();
  clock_.advance(kSettle);
  EXPECT_EQ(names(drain()), std::vector<std::string>{"c/deep/w"});
}

TEST_F(HotFolderTest, ANameTheReceiverWouldRefuseStaysInPlace) {
  write_file(dir_ / "bad\nname", "b");
  write_file(dir_ / "good", "g");
  start();
  clock_.advance(kSettle);
  EXPECT_EQ(names(drain()), std::vector<std::string>{"good"});
  clock_.advance(10 * kSettle);
  EXPECT_TRUE(drain().empty());
  EXPECT_TRUE(fs::exists(dir_ / "bad\nname"));
}

TEST_F(HotFolderTest, AWriterThatKeepsTheFileOpenIsNotSentUntilItCloses) {
  start();
  const int fd = ::open((dir_ / "slow.bin").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  for (int part = 0; part < 5; ++part) {
    ASSERT_EQ(::write(fd, "0123456789", 10), 10);
    drain();
    clock_.advance(4 * kSettle);  // a pause far longer than the settle time
    EXPECT_TRUE(drain().empty()) << "part " << part;
  }
  ::close(fd);
  drain();
  clock_.advance(kSettle);
  const auto ready = drain();
  ASSERT_EQ(names(ready), std::vector<std::string>{"slow.bin"});
  EXPECT_EQ(metas_.at("slow.bin").size, 50u);
}

// The scan sees the writer through a file lease. Where the file system's leases see writers (as
// a probe on a scratch file beside the hot folder finds), a file handed out with its writer still
// on it is a failure.
TEST_F(HotFolderTest, AFileFoundAtStartWithAWriterStillOnItWaitsForTheClose) {
  if (const std::string why = ddft::testing::file_leases_missing(base_); !why.empty()) {
    GTEST_SKIP() << why;
  }
  const int fd = ::open((dir_ / "open.bin").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, "abc", 3), 3);
  start();
  clock_.advance(10 * kSettle);
  const auto early = drain();
  ::close(fd);
  EXPECT_EQ(names(early), std::vector<std::string>{}) << "handed out while a writer had it open";
  drain();
  clock_.advance(kSettle);
  EXPECT_EQ(names(drain()), std::vector<std::string>{"open.bin"});
}

TEST_F(HotFolderTest, MovedInFilesAreSent) {
  write_file(base_ / "staging/m.txt", "moved");
  start();
  fs::rename(base_ / "staging/m.txt", dir_ / "m.txt");
  drain();
  clock_.advance(kSettle);
  EXPECT_EQ(names(drain()), std::vector<std::string>{"m.txt"});
}

TEST_F(HotFolderTest, SentDirKeepsTheRelativePathAndNumbersACollision) {
  write_file(sent_ / "sub/a.txt", "old");
  write_file(dir_ / "sub/a.txt", "new");
  write_file(dir_ / "b.tar.gz", "b");
  auto o = opts();
  o.sent_dir = sent_.string();
  start(o);
  clock_.advance(kSettle);
  ASSERT_EQ(drain().size(), 2u);
  sent("sub/a.txt");
  sent("b.tar.gz");
  EXPECT_EQ(read_file(sent_ / "sub/a.txt"), "old") << "never overwritten";
  EXPECT_EQ(read_file(sent_ / "sub/a.1.txt"), "new");
  EXPECT_EQ(read_file(sent_ / "b.tar.gz"), "b");
  EXPECT_FALSE(fs::exists(dir_ / "sub/a.txt"));
  // A third one of the same name.
  write_file(dir_ / "sub/a.txt", "newer");
  drain();
  clock_.advance(kSettle);
  ASSERT_EQ(drain().size(), 1u);
  sent("sub/a.txt");
  EXPECT_EQ(read_file(sent_ / "sub/a.2.txt"), "newer");
}

TEST_F(HotFolderTest, FilteredReservedAndNonRegularFilesStayAndAreNotSent) {
  write_file(dir_ / "keep.tmp", "t");
  write_file(dir_ / "logs/x.log", "l");
  write_file(dir_ / "go.txt", "g");
  write_file(dir_ / ".ddft-private", "p");
  fs::create_symlink(dir_ / "go.txt", dir_ / "link");
  ASSERT_EQ(::mkfifo((dir_ / "pipe").c_str(), 0600), 0);
  auto o = opts();
  o.filter = common::PathFilter({}, {"*.tmp", "logs/*"});
  start(o);
  write_file(dir_ / "later.tmp", "t2");
  drain();
  clock_.advance(kSettle);
  EXPECT_EQ(names(drain()), std::vector<std::string>{"go.txt"});
  clock_.advance(100 * kSettle);
  EXPECT_TRUE(drain().empty());
  for (const char* n : {"keep.tmp", "logs/x.log", ".ddft-private", "link", "pipe", "later.tmp"}) {
    EXPECT_TRUE(fs::exists(fs::symlink_status(dir_ / n))) << n;
  }
}

// Links in the hot folder are never followed: under --symlinks skip each is named once (Warn) as
// it appears, under error once as a failure (Error); both counted and told to on_link (the
// manifest). A link removed and made again is named again.
TEST_F(HotFolderTest, LinksAreNamedOnceEachAndCountedNeverFollowed) {
  for (const SymlinkMode mode : {SymlinkMode::kSkip, SymlinkMode::kError}) {
    SCOPED_TRACE(std::string(symlink_mode_name(mode)));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    write_file(dir_ / "go.txt", "g");
    write_file(base_ / "outside/x.txt", "x");
    fs::create_symlink(dir_ / "go.txt", dir_ / "file_link");
    fs::create_directory_symlink(base_ / "outside", dir_ / "dir_link");
    fs::create_directories(dir_ / "sub");
    fs::create_symlink(dir_ / "nowhere", dir_ / "sub/dangling_soon");
    std::vector<std::pair<std::string, bool>> told;
    const ddft::testing::LogCapture log;
    auto o = opts();
    o.symlinks = mode;
    o.on_link = [&told](const std::string& rel, const std::string&, bool failed) {
      told.emplace_back(rel, failed);
    };
    start(o);
    fs::create_symlink("go.txt", dir_ / "sub/later_link");  // seen by its event
    drain();
    clock_.advance(kSettle);
    EXPECT_EQ(names(drain()), std::vector<std::string>{"go.txt"});
    drain();
    const bool failed = mode == SymlinkMode::kError;
    std::multiset<std::string> names_told;
    for (const auto& [rel, f] : told) {
      names_told.insert(rel);
      EXPECT_EQ(f, failed) << rel;
    }
    EXPECT_EQ(names_told, (std::multiset<std::string>{"dir_link", "file_link", "sub/dangling_soon",
                                                      "sub/later_link"}));
    EXPECT_EQ(hf_->links_skipped(), failed ? 0u : 4u);
    EXPECT_EQ(hf_->links_failed(), failed ? 4u : 0u);
    const std::string text = log.text();
    const std::string word = failed ? "Error: hot folder: 'file_link' is a symbolic link (to '"
                                    : "Warn: hot folder: skipping symbolic link 'file_link' (to '";
    EXPECT_EQ(text.find(word), text.rfind(word)) << text;
    EXPECT_NE(text.find(word), std::string::npos) << text;
    // Gone and back: named a second time.
    fs::remove(dir_ / "file_link");
    drain();
    fs::create_symlink("go.txt", dir_ / "file_link");
    drain();
    EXPECT_EQ(told.size(), 5u);
    EXPECT_TRUE(fs::exists(base_ / "outside/x.txt")) << "a link's target is left alone";
    EXPECT_TRUE(fs::is_symlink(dir_ / "dir_link"));
    hf_.reset();
  }
}

// --shard: two hosts on one folder. Each tracks, sends and removes only its shard's files; the
// other's stay, unmentioned and not counted as waiting. Together they send every file, once.
TEST_F(HotFolderTest, TwoShardsOverOneFolderSendDisjointSetsThatTogetherAreEveryFile) {
  std::set<std::string> all;
  for (int i = 0; i < 24; ++i) {
    const std::string rel = (i % 3 == 0 ? "sub/f" : "f") + std::to_string(i) + ".bin";
    write_file(dir_ / rel, "x");
    all.insert(rel);
  }
  const ddft::testing::LogCapture log;
  HotFolderOptions o0 = opts();
  o0.shard = Shard{0, 2};
  HotFolderOptions o1 = opts();
  o1.shard = Shard{1, 2};
  start(o0);
  HotFolder other(o1, clock_);
  for (int i = 0; i < 8; ++i) {  // seen by their events, by both
    const std::string rel = "late/g" + std::to_string(i) + ".txt";
    write_file(dir_ / rel, "y");
    all.insert(rel);
  }
  EXPECT_TRUE(drain().empty());
  EXPECT_TRUE(drain(other).empty());
  const auto in_shard_0 = std::count_if(all.begin(), all.end(),
                                        [](const std::string& r) { return shard_of(r, 2) == 0; });
  ASSERT_GT(in_shard_0, 0);
  ASSERT_LT(in_shard_0, static_cast<long>(all.size()));
  EXPECT_EQ(hf_->backlog()->files, static_cast<uint64_t>(in_shard_0));
  EXPECT_EQ(other.backlog()->files, all.size() - static_cast<uint64_t>(in_shard_0));

  clock_.advance(kSettle);
  const std::vector<std::string> got0 = names(drain());
  const std::vector<std::string> got1 = names(drain(other));
  std::set<std::string> both;
  for (const auto& r : got0) EXPECT_EQ(shard_of(r, 2), 0u) << r;
  for (const auto& r : got1) EXPECT_EQ(shard_of(r, 2), 1u) << r;
  both.insert(got0.begin(), got0.end());
  both.insert(got1.begin(), got1.end());
  EXPECT_EQ(got0.size() + got1.size(), both.size()) << "a file handed out twice";
  EXPECT_EQ(both, all);

  // Shard 0 sends its files: they go, shard 1's stay where they are.
  for (const auto& r : got0) sent(r);
  for (const auto& r : got0) EXPECT_FALSE(fs::exists(dir_ / r)) << r;
  for (const auto& r : got1) EXPECT_TRUE(fs::exists(dir_ / r)) << r;
  clock_.advance(100 * kSettle);
  EXPECT_TRUE(drain().empty()) << "the other shard's files are never this host's";
  for (const auto& r : got1) sent(other, r);
  for (const auto& r : all) EXPECT_FALSE(fs::exists(dir_ / r)) << r;

  // A journal each, neither naming the other's files; neither host said a word about the other's
  // files or journal.
  const std::string j0 = read_file(dir_ / ".ddft-watch-journal.shard-0-of-2");
  const std::string j1 = read_file(dir_ / ".ddft-watch-journal.shard-1-of-2");
  for (const auto& r : got0) EXPECT_EQ(j1.find(" " + r + " "), std::string::npos) << r;
  for (const auto& r : got1) EXPECT_EQ(j0.find(" " + r + " "), std::string::npos) << r;
  EXPECT_NE(j0.find(" " + got0.front() + " "), std::string::npos) << j0;
  EXPECT_FALSE(fs::exists(dir_ / ".ddft-watch-journal"));
  EXPECT_EQ(log.text().find("leaving"), std::string::npos) << log.text();
}

TEST_F(HotFolderTest, AFailedFileStaysAndIsTriedAgainOnlyWhenItChanges) {
  write_file(dir_ / "f.bin", "1");
  start();
  clock_.advance(kSettle);
  ASSERT_EQ(names(drain()), std::vector<std::string>{"f.bin"});
  failed("f.bin");
  EXPECT_TRUE(fs::exists(dir_ / "f.bin"));
  for (int i = 0; i < 20; ++i) {
    clock_.advance(kSettle);
    EXPECT_TRUE(drain().empty()) << "no retry loop";
  }
  fs::permissions(dir_ / "f.bin", fs::perms::owner_all);  // chmod: may be the fix
  drain();
  clock_.advance(kSettle);
  EXPECT_EQ(names(drain()), std::vector<std::string>{"f.bin"});
  failed("f.bin");
  write_file(dir_ / "f.bin", "22");  // rewritten
  drain();
  clock_.advance(kSettle);
  EXPECT_EQ(names(drain()), std::vector<std::string>{"f.bin"});
}

TEST_F(HotFolderTest, AFileChangedWhileItWasSentIsNotRemovedAndIsSentAgain) {
  write_file(dir_ / "c.bin", "first");
  start();
  clock_.advance(kSettle);
  ASSERT_EQ(names(drain()), std::vector<std::string>{"c.bin"});
  const FileMeta as_read = metas_.at("c.bin");
  std::ofstream(dir_ / "c.bin", std::ios::app) << " and more";
  drain();  // its events are read while it is in flight
  hf_->file_sent(as_read, common::Digest{});
  EXPECT_EQ(read_file(dir_ / "c.bin"), "first and more");
  EXPECT_EQ(journal().find(" c.bin "), std::string::npos) << "not recorded as sent";
  drain();
  clock_.advance(kSettle);
  ASSERT_EQ(names(drain()), std::vector<std::string>{"c.bin"});
  EXPECT_EQ(metas_.at("c.bin").size, 14u);
  sent("c.bin");
  EXPECT_FALSE(fs::exists(dir_ / "c.bin"));
}

TEST_F(HotFolderTest, ARestartFinishesWhatTheJournalRecordedAsSentWithoutSendingIt) {
  write_file(dir_ / "a.txt", "sent before the crash");
  write_file(dir_ / "b.txt", "changed since");
  write_file(dir_ / "c.txt", "never sent");
  write_file(dir_ / "d/e.txt", "sent, moved");
  auto id = [&](const char* rel) {
    struct stat st {};
    ::lstat((dir_ / rel).c_str(), &st);
    return FileIdentity{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
                        static_cast<uint64_t>(st.st_size),
                        st.st_mtim.tv_sec * 1'000'000'000 + st.st_mtim.tv_nsec};
  };
  {
    WatchJournal j((dir_ / ".ddft-watch-journal").string());
    std::string why;
    ASSERT_TRUE(j.record_sent({"a.txt", id("a.txt")}, &why)) << why;
    FileIdentity b = id("b.txt");
    b.mtime_ns -= 1;
    ASSERT_TRUE(j.record_sent({"b.txt", b}, &why)) << why;
    ASSERT_TRUE(j.record_sent({"gone.txt", id("a.txt")}, &why)) << why;
    ASSERT_TRUE(j.record_sent({"d/e.txt", id("d/e.txt")}, &why)) << why;
  }
  auto o = opts();
  o.sent_dir = sent_.string();
  start(o);
  EXPECT_FALSE(fs::exists(dir_ / "a.txt"));
  EXPECT_EQ(read_file(sent_ / "a.txt"), "sent before the crash");
  EXPECT_EQ(read_file(sent_ / "d/e.txt"), "sent, moved");
  EXPECT_EQ(hf_->files_removed(), 2u);
  clock_.advance(kSettle);
  EXPECT_EQ(names(drain()), (std::vector<std::string>{"b.txt", "c.txt"}));
  EXPECT_FALSE(fs::exists(dir_ / "d")) << "emptied by the replay";
  // Compacted at start: nothing unfinished is left in it.
  hf_.reset();
  WatchJournal j((dir_ / ".ddft-watch-journal").string());
  EXPECT_TRUE(j.unfinished().empty());
}

// ---- Renames by producers at the worst moments, placed there by the test seam. ----

FileIdentity identity(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return FileIdentity{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
                      static_cast<uint64_t>(st.st_size),
                      st.st_mtim.tv_sec * 1'000'000'000 + st.st_mtim.tv_nsec};
}

// What a handed-out file's descriptor reads: the bytes the reader would send.
std::string read_all(const SourceFile& f) {
  if (!f.opened) return read_file(f.path);
  std::string out(1 << 20, '\0');
  const ssize_t n = ::pread(f.opened->get(), out.data(), out.size(), 0);
  out.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return out;
}

// A file renamed into a folder while a scan walks the tree (after the folder's watch is set, as
// its entries are read): seen by the scan and by its event, tracked once, sent once and whole.
// At start, in a subfolder, and in a later rescan.
TEST_F(HotFolderTest, AFileRenamedInWhileAScanWalksTheFolderIsSentOnceWhole) {
  for (const std::string folder : {"", "sub"}) {
    for (const bool rescan : {false, true}) {
      SCOPED_TRACE("folder '" + folder + "'" + (rescan ? ", a rescan" : ", the first scan"));
      hf_.reset();
      fs::remove_all(dir_);
      fs::create_directories(dir_ / "sub");
      write_file(dir_ / "sub/old.bin", "already there");
      const std::string whole(200'000, 'w');
      write_file(base_ / "staging/new.bin", whole);
      const std::string rel = folder.empty() ? "new.bin" : folder + "/new.bin";
      bool armed = !rescan;
      auto o = opts();
      o.rescan_s = rescan ? 1 : 0;
      o.test_hook = [&](std::string_view point, const std::string& at) {
        if (!armed || point != "scan" || at != folder) return;
        armed = false;
        fs::rename(base_ / "staging/new.bin", dir_ / rel);
      };
      start(o);
      if (rescan) {
        armed = true;
        clock_.advance(1s);
        drain();
        ASSERT_FALSE(armed) << "the rescan walked the folder";
      }
      drain();
      clock_.advance(kSettle);
      const auto ready = drain();
      std::vector<std::string> got = names(ready);
      std::sort(got.begin(), got.end());
      ASSERT_EQ(got, (std::vector<std::string>{rel < "sub/old.bin" ? rel : "sub/old.bin",
                                               rel < "sub/old.bin" ? "sub/old.bin" : rel}));
      for (const auto& f : ready) {
        if (f.rel_path == rel) {
          EXPECT_EQ(read_all(f), whole);
        }
      }
      sent(rel);
      sent("sub/old.bin");
      for (int i = 0; i < 3; ++i) {
        clock_.advance(kSettle);
        EXPECT_TRUE(drain().empty()) << "sent once";
      }
      EXPECT_FALSE(fs::exists(dir_ / rel));
    }
  }
}

// A new version renamed over the name between the probe that found the file settled and its
// open for the reader: not read in the old one's place (it would go once now and once again as
// "changed while it was sent"). It waits its settle time and goes once.
TEST_F(HotFolderTest, AVersionRenamedOverTheNameAsItIsHandedOutWaitsAndIsSentOnce) {
  write_file(dir_ / "a.bin", "version A");
  write_file(base_ / "staging/a.bin", "version B, renamed in");
  bool armed = true;
  auto o = opts();
  o.test_hook = [&](std::string_view point, const std::string& rel) {
    if (!armed || point != "handout" || rel != "a.bin") return;
    armed = false;
    fs::rename(base_ / "staging/a.bin", dir_ / "a.bin");
  };
  start(o);
  clock_.advance(kSettle);
  EXPECT_TRUE(drain().empty()) << "changed as it was handed out: waiting again";
  EXPECT_FALSE(armed);
  drain();  // its rename's event: the settle time starts again
  clock_.advance(kSettle);
  const auto ready = drain();
  ASSERT_EQ(names(ready), std::vector<std::string>{"a.bin"});
  EXPECT_EQ(read_all(ready[0]), "version B, renamed in");
  sent("a.bin");
  EXPECT_FALSE(fs::exists(dir_ / "a.bin"));
  clock_.advance(kSettle);
  EXPECT_TRUE(drain().empty()) << "sent once";
}

// The last race of removing a sent file: a new version renamed over it in the instant between the
// last check and the removal. The name is moved to a private one first and the inode that moved is
// checked: the new version is put back and sent, never deleted or moved away as if sent. When the
// name was taken again meanwhile (a third version), it goes back as "name.1.ext".
TEST_F(HotFolderTest, ANewVersionRenamedOverASentFileAsItIsRemovedIsPutBackAndSent) {
  for (const bool move : {false, true}) {
    for (const bool taken_again : {false, true}) {
      SCOPED_TRACE(std::string(move ? "--sent-dir" : "delete") +
                   (taken_again ? ", the name taken again" : ""));
      hf_.reset();
      fs::remove_all(dir_);
      fs::remove_all(sent_);
      fs::create_directories(sent_);
      write_file(dir_ / "d/a.bin", "A, sent");
      write_file(base_ / "staging/a.bin", "B, renamed over it");
      const ddft::testing::LogCapture log;
      auto o = opts();
      if (move) o.sent_dir = sent_.string();
      bool armed = true;  // the first removal only
      o.test_hook = [&](std::string_view point, const std::string& rel) {
        if (!armed || rel != "d/a.bin") return;
        if (point == "finish") fs::rename(base_ / "staging/a.bin", dir_ / "d/a.bin");
        if (point == "finish-moved") {
          armed = false;
          if (taken_again) write_file(dir_ / "d/a.bin", "C, newer still");
        }
      };
      start(o);
      clock_.advance(kSettle);
      ASSERT_EQ(names(drain()), std::vector<std::string>{"d/a.bin"});
      sent("d/a.bin");
      const std::string back = taken_again ? "d/a.1.bin" : "d/a.bin";
      EXPECT_EQ(read_file(dir_ / back), "B, renamed over it");
      if (taken_again) {
        EXPECT_EQ(read_file(dir_ / "d/a.bin"), "C, newer still");
      }
      EXPECT_FALSE(fs::exists(sent_ / "d/a.bin")) << "A was replaced: nothing of it to move";
      for (const auto& e : fs::directory_iterator(dir_ / "d")) {
        EXPECT_FALSE(e.path().filename().string().starts_with(".ddft-")) << e.path();
      }
      const std::string text = log.text();
      EXPECT_NE(text.find("Warn: hot folder: a new version of 'd/a.bin' was renamed over it as "
                          "it was removed; it is put back as '" +
                          back + "' and sent"),
                std::string::npos)
          << text;
      EXPECT_EQ(text.find("reserved"), std::string::npos) << "its private name is silent";
      EXPECT_EQ(hf_->files_removed(), 0u);
      // Each version left goes once.
      drain();
      clock_.advance(kSettle);
      const auto ready = drain();
      std::vector<std::string> got = names(ready);
      std::sort(got.begin(), got.end());
      const std::vector<std::string> want = taken_again
                                                ? std::vector<std::string>{"d/a.1.bin", "d/a.bin"}
                                                : std::vector<std::string>{"d/a.bin"};
      EXPECT_EQ(got, want);
      for (const auto& f : ready) {
        EXPECT_EQ(read_all(f), f.rel_path == back ? "B, renamed over it" : "C, newer still");
        sent(f.rel_path);
      }
      clock_.advance(kSettle);
      EXPECT_TRUE(drain().empty());
    }
  }
}

// A stop between the private rename and the removal leaves the file under its private name.
// The journal's record finds it at the next start: the version sent is removed (not sent again),
// a new version found there instead is put back and sent.
TEST_F(HotFolderTest, ARestartFinishesAFileLeftUnderItsPrivateName) {
  write_file(dir_ / "sub/a.bin", "A, sent before the stop");
  write_file(dir_ / "b.bin", "B's first version, sent");
  write_file(base_ / "staging/b.bin", "B's second version");
  const JournalRecord a{"sub/a.bin", identity(dir_ / "sub/a.bin")};
  const JournalRecord b{"b.bin", identity(dir_ / "b.bin")};
  {
    WatchJournal j((dir_ / ".ddft-watch-journal").string());
    std::string why;
    ASSERT_TRUE(j.record_sent(a, &why)) << why;
    ASSERT_TRUE(j.record_sent(b, &why)) << why;
  }
  EXPECT_EQ(finishing_name(a).rfind("sub/.ddft-finishing-", 0), 0u) << finishing_name(a);
  fs::rename(dir_ / "sub/a.bin", dir_ / finishing_name(a));
  // What b's private rename moved was a version renamed over it in that instant.
  fs::remove(dir_ / "b.bin");
  fs::rename(base_ / "staging/b.bin", dir_ / finishing_name(b));
  const ddft::testing::LogCapture log;
  start();
  EXPECT_FALSE(fs::exists(dir_ / finishing_name(a)));
  EXPECT_FALSE(fs::exists(dir_ / finishing_name(b)));
  EXPECT_FALSE(fs::exists(dir_ / "sub/a.bin"));
  EXPECT_EQ(read_file(dir_ / "b.bin"), "B's second version");
  EXPECT_EQ(hf_->files_removed(), 1u);
  EXPECT_NE(log.text().find("'sub/a.bin' was sent before the restart and found under its "
                            "private name: deleted without sending it again"),
            std::string::npos)
      << log.text();
  clock_.advance(kSettle);
  const auto ready = drain();
  ASSERT_EQ(names(ready), std::vector<std::string>{"b.bin"});
  EXPECT_EQ(read_all(ready[0]), "B's second version");
  hf_.reset();
  WatchJournal j((dir_ / ".ddft-watch-journal").string());
  EXPECT_TRUE(j.unfinished().empty());
}

TEST_F(HotFolderTest, BadSettingsAreOneLineAndTouchNothing) {
  write_file(dir_ / "x.txt", "x");
  write_file(base_ / "plain", "p");
  struct Case {
    HotFolderOptions o;
    std::string expect;
  };
  std::vector<Case> cases;
  auto o = opts();
  o.dir = (base_ / "missing").string();
  cases.push_back({o, "--watch '" + o.dir + "': No such file or directory"});
  o = opts();
  o.dir = (base_ / "plain").string();
  cases.push_back({o, "--watch '" + o.dir + "': not a folder"});
  o = opts();
  o.sent_dir = (dir_ / "sent").string();
  fs::create_directories(dir_ / "sent");
  cases.push_back({o, "is inside the watched folder"});
  o = opts();
  o.sent_dir = dir_.string();
  cases.push_back({o, "is inside the watched folder"});
  o = opts();
  o.sent_dir = (base_ / "nosuch").string();
  cases.push_back({o, "--sent-dir '" + o.sent_dir + "': No such file or directory"});
  o = opts();
  o.sent_dir = (base_ / "plain").string();
  cases.push_back({o, "not a folder"});
  o = opts();
  o.journal = (dir_ / "journal.txt").string();
  cases.push_back({o, "is inside the watched folder and would be sent"});
  o = opts();
  o.journal = (base_ / "plain").string();
  cases.push_back({o, "is not a ddft watch journal"});
  for (auto& c : cases) {
    try {
      HotFolder hf(c.o, clock_);
      ADD_FAILURE() << "accepted: " << c.expect;
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(c.expect), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
  EXPECT_EQ(read_file(dir_ / "x.txt"), "x");
  EXPECT_EQ(read_file(base_ / "plain"), "p");
  EXPECT_FALSE(fs::exists(dir_ / ".ddft-watch-journal")) << "nothing created before the checks";
}

TEST_F(HotFolderTest, SentDirOnAnotherFilesystemIsRefused) {
  struct stat a {
  }, b{};
  const fs::path other = "/dev/shm";
  if (::stat(other.c_str(), &b) != 0 || ::stat(base_.c_str(), &a) != 0 || a.st_dev == b.st_dev) {
    GTEST_SKIP() << "no second filesystem at hand";
  }
  auto o = opts();
  o.sent_dir = other.string();
  try {
    HotFolder hf(o, clock_);
    ADD_FAILURE() << "accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("is on another filesystem"), std::string::npos)
        << e.what();
  }
}

TEST_F(HotFolderTest, AnEventQueueOverflowRescansAndMissesNothing) {
  std::ifstream limit_file("/proc/sys/fs/inotify/max_queued_events");
  size_t limit = 16384;
  limit_file >> limit;
  if (limit > 100'000) GTEST_SKIP() << "max_queued_events " << limit << " is too large to fill";
  start();
  // Three events per file (create, modify, close): more than the queue holds.
  const size_t count = limit / 3 + 200;
  for (size_t i = 0; i < count; ++i) write_file(dir_ / ("f" + std::to_string(i)), "z");
  drain();
  clock_.advance(kSettle);
  EXPECT_EQ(drain().size(), count);
}

// Periodic rescans (every 10 s on a network filesystem, where inotify misses what other machines
// write) neither hold back a settling file nor send anything twice.
TEST_F(HotFolderTest, PeriodicRescansDoNotHoldBackASettlingFile) {
  write_file(dir_ / "a.bin", "a");
  HotFolderOptions o = opts();
  o.rescan_s = 1;
  start(o);
  EXPECT_TRUE(drain().empty());
  for (int i = 0; i < 4; ++i) {
    clock_.advance(1s);
    EXPECT_TRUE(drain().empty()) << i;
  }
  write_file(dir_ / "b.bin", "b");
  clock_.advance(1s);  // the settle time, with a rescan each second meanwhile
  EXPECT_EQ(names(drain()), std::vector<std::string>{"a.bin"});
  clock_.advance(4s);
  EXPECT_TRUE(drain().empty()) << "a.bin is in flight: a rescan does not hand it out again";
  clock_.advance(1s);
  EXPECT_EQ(names(drain()), std::vector<std::string>{"b.bin"});
}

TEST_F(HotFolderTest, TheSessionEndsWhenDirItselfGoes) {
  start();
  EXPECT_FALSE(hf_->lost_root());
  fs::remove_all(dir_);
  drain();
  EXPECT_TRUE(hf_->lost_root());
  std::stop_source never;
  EXPECT_EQ(hf_->next(never.get_token()), std::nullopt);
}

TEST_F(HotFolderTest, NextReturnsNothingOnceStopped) {
  start();
  std::stop_source stop;
  std::jthread stopper([&] {
    std::this_thread::sleep_for(50ms);
    stop.request_stop();
  });
  EXPECT_EQ(hf_->next(stop.get_token()), std::nullopt);  // woken by the stop, not a timeout
}

}  // namespace
}  // namespace ddft::sender
