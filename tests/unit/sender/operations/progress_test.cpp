#include "sender/operations/progress.hpp"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>
#include <regex>

#include "sender/pipeline.hpp"
#include "support/terminal_screen.hpp"

namespace ddft::sender {
namespace {
using namespace std::chrono_literals;
using ddft::testing::replay_terminal;

constexpr uint64_t kMB = 1 << 20;

bool contains(const std::string& s, std::string_view what) {
  return s.find(what) != std::string::npos;
}

size_t count(const std::string& s, std::string_view what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

TEST(ProgressWanted, AutoMeansATerminalAndNotQuiet) {
  EXPECT_TRUE(progress_wanted(ProgressMode::kAuto, false, true));
  EXPECT_FALSE(progress_wanted(ProgressMode::kAuto, false, false));
  EXPECT_FALSE(progress_wanted(ProgressMode::kAuto, true, true));
  EXPECT_TRUE(progress_wanted(ProgressMode::kOn, false, false));
  EXPECT_TRUE(progress_wanted(ProgressMode::kOn, true, false));
  EXPECT_FALSE(progress_wanted(ProgressMode::kOff, false, true));
}

// A file half sent at 20 MB/s in a batch of 80 MB a quarter done.
ProgressView half_file() {
  ProgressView v;
  v.has_file = true;
  v.file_name = "photos/2024/c.jpg";
  v.file_done = 20 * kMB;
  v.file_total = 40 * kMB;
  v.file_rate = 20;
  v.files_done = 1;
  v.files_total = 3;
  v.batch_done = 20 * kMB;
  v.batch_total = 80 * kMB;
  v.batch_rate = 20;
  return v;
}

TEST(RenderProgress, FileAndBatchLinesWithBytesPercentRateAndEta) {
  const auto lines = render_progress(half_file(), 120);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0],
            "photos/2024/c.jpg [###############---------------]   50.0%  20.0/40.0 MB   "
            "20.00 MB/s  ETA 00:00:01");
  EXPECT_EQ(lines[1],
            "total 1/3 files   [#######-----------------------]   25.0%  20.0/80.0 MB   "
            "20.00 MB/s  ETA 00:00:03");
}

TEST(RenderProgress, BarsLineUpAndKeepTheirPlaceAsFiguresGrow) {
  ProgressView v = half_file();
  v.file_name = "a.bin";
  v.batch_total = 1536 * kMB;  // longer figures on the batch line
  v.batch_rate = 1234.5;
  const auto first = render_progress(v, 100);
  ASSERT_EQ(first.size(), 2u);
  const size_t open = first[0].find('[');
  const size_t close = first[0].find(']');
  ASSERT_NE(close, std::string::npos) << first[0];
  for (uint64_t done : {uint64_t{0}, 5 * kMB, 39 * kMB}) {
    v.file_done = done;
    v.batch_done = done;
    v.file_rate = static_cast<double>(done) / kMB;
    const auto lines = render_progress(v, 100);
    for (size_t i = 0; i < lines.size(); ++i) {
      EXPECT_EQ(lines[i].find('['), open) << lines[i];
      EXPECT_EQ(lines[i].find(']'), close) << lines[i];
      EXPECT_EQ(lines[i].size(), first[i].size()) << lines[i];
    }
  }
}

TEST(RenderProgress, UnitsFollowTheTotalAndNoRateMeansNoEta) {
  ProgressView v = half_file();
  v.file_done = 512;
  v.file_total = 3 * (uint64_t{1} << 30);
  v.file_rate = 0;
  const auto lines = render_progress(v, 120);
  EXPECT_TRUE(contains(lines[0], "0.0/3.0 GB")) << lines[0];
  EXPECT_TRUE(contains(lines[0], "ETA --:--:--")) << lines[0];
  EXPECT_TRUE(contains(lines[0], "  0.0%")) << lines[0];
}

TEST(RenderProgress, AnEmptyFileIsWholeAndDoneMeansNoTimeLeft) {
  ProgressView v = half_file();
  v.file_done = 0;
  v.file_total = 0;
  v.batch_done = v.batch_total.value();
  const auto lines = render_progress(v, 120);
  EXPECT_TRUE(contains(lines[0], "100.0%")) << lines[0];
  EXPECT_TRUE(contains(lines[1], "100.0%")) << lines[1];
  EXPECT_TRUE(contains(lines[1], "ETA 00:00:00")) << lines[1];
}

TEST(RenderProgress, EveryLineFitsAndFieldsGoInOrderAsTheTerminalNarrows) {
  const ProgressView v = half_file();
  for (size_t width = 0; width <= 200; ++width) {
    for (const auto& line : render_progress(v, width)) {
      EXPECT_LE(line.size() + 1, std::max<size_t>(width, 1)) << width << ": " << line;
    }
  }
  // 80 columns: a shorter bar; 70: everything but the bar.
  auto l = render_progress(v, 80)[0];
  EXPECT_EQ(l, "photos/2024/c.jpg [#####-----]   50.0%  20.0/40.0 MB   20.00 MB/s  ETA 00:00:01");
  l = render_progress(v, 70)[0];
  EXPECT_EQ(l, "photos/2024/c.jpg   50.0%  20.0/40.0 MB   20.00 MB/s  ETA 00:00:01");
  // Then the bytes go, then the rate; the percent and the ETA stay longest.
  l = render_progress(v, 60)[0];
  EXPECT_EQ(l, "photos/2024/c.jpg   50.0%   20.00 MB/s  ETA 00:00:01");
  l = render_progress(v, 45)[0];
  EXPECT_EQ(l, "photos/2024/c.jpg   50.0%  ETA 00:00:01");
  l = render_progress(v, 30)[0];
  EXPECT_EQ(l, "photos/2024/c.jpg   50.0%");
  // Narrower still the name is shortened from the left, keeping its end.
  l = render_progress(v, 20)[0];
  EXPECT_EQ(l, "...24/c.jpg   50.0%");
}

TEST(RenderProgress, LongNamesAreShortenedFromTheLeft) {
  ProgressView v = half_file();
  v.file_name = std::string(200, 'd') + "/the-end.bin";
  const auto line = render_progress(v, 100)[0];
  EXPECT_LE(line.size(), 99u);
  EXPECT_TRUE(line.starts_with("...ddd")) << line;
  // The bar stays: the name gives way for it.
  EXPECT_TRUE(contains(line, "/the-end.bin [#####-----]   50.0%")) << line;
}

TEST(RenderProgress, ControlBytesAndBadUtf8InNamesCannotReachTheTerminal) {
  ProgressView v = half_file();
  v.file_name = "evil\x1b]0;owned\x07\r\n\xff-\xc3\xa9.txt";  // é stays
  const auto line = render_progress(v, 120)[0];
  EXPECT_TRUE(
      line.starts_with("evil?]0;owned????"
                       "-\xc3\xa9.txt"))
      << line;
  for (char c : line) EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20) << line;
}

TEST(RenderProgress, AnOpenEndedBatchShowsFilesBytesAndQueueButNoPercentOrEta) {
  ProgressView v;
  v.files_done = 12;
  v.files_failed = 1;
  v.batch_done = 1536 * kMB;
  v.batch_rate = 97.5;
  auto lines = render_progress(v, 120);
  ASSERT_EQ(lines.size(), 1u);  // no file in progress: the batch line only
  EXPECT_EQ(lines[0], "total 12 files, 1 failed  1.5 GB sent   97.50 MB/s");
  v.backlog = Backlog{3, 12 * kMB, std::nullopt};
  lines = render_progress(v, 120);
  EXPECT_EQ(lines[0],
            "total 12 files, 1 failed  1.5 GB sent   97.50 MB/s  queued 3 files, 12.0 MB");
  EXPECT_FALSE(contains(lines[0], "%"));
  EXPECT_FALSE(contains(lines[0], "ETA"));
  // Narrow: the queue goes first, the bytes sent stay.
  EXPECT_EQ(render_progress(v, 60)[0], "total 12 files, 1 failed  1.5 GB sent   97.50 MB/s");
}

// A console on an in-memory stream.
class MemConsole {
 public:
  MemConsole() : file_(open_memstream(&buf_, &len_)), console_(file_) {}
  ~MemConsole() {
    std::fclose(file_);
    std::free(buf_);
  }
  common::Console& console() { return console_; }
  std::string text() {
    std::fflush(file_);
    return std::string(buf_, len_);
  }

 private:
  char* buf_ = nullptr;
  size_t len_ = 0;
  std::FILE* file_;
  common::Console console_;
};

FileMeta meta(uint32_t id, const std::string& name, uint64_t size) {
  FileMeta m;
  m.file_id = id;
  m.rel_path = name;
  m.size = size;
  return m;
}

class ProgressDisplayTest : public ::testing::Test {
 protected:
  ProgressOptions options(std::vector<uint64_t> planned) {
    ProgressOptions o;
    o.planned = std::move(planned);
    o.columns = [this] { return columns_; };
    return o;
  }
  common::FakeClock clock_;
  MemConsole mem_;
  size_t columns_ = 120;
};

// The number of times the display was drawn: each draw turns autowrap off first.
size_t draws(const std::string& out) { return count(out, "\x1b[?7l"); }

TEST_F(ProgressDisplayTest, RedrawsAtMostEveryIntervalOnTheInjectedClock) {
  ProgressDisplay d(mem_.console(), clock_, options({100 * kMB}));
  d.session_started(1);
  EXPECT_EQ(draws(mem_.text()), 1u);  // at once
  const FileMeta f = meta(1, "big.bin", 100 * kMB);
  d.file_started(f);
  for (int i = 1; i <= 50; ++i) d.file_progress(f, i * kMB);  // no time passes: no redraw
  EXPECT_EQ(draws(mem_.text()), 1u);
  clock_.advance(99ms);
  d.file_progress(f, 51 * kMB);
  EXPECT_EQ(draws(mem_.text()), 1u);
  clock_.advance(1ms);
  d.file_progress(f, 52 * kMB);
  EXPECT_EQ(draws(mem_.text()), 2u);
  // One second of progress every millisecond: ten redraws.
  for (int i = 0; i < 1000; ++i) {
    clock_.advance(1ms);
    d.file_progress(f, 52 * kMB + static_cast<uint64_t>(i) * 1024);
  }
  EXPECT_EQ(draws(mem_.text()), 12u);
  // The last frame shows the latest figures.
  const auto screen = replay_terminal(mem_.text());
  ASSERT_EQ(screen.size(), 2u);
  EXPECT_TRUE(contains(screen[0], "big.bin")) << screen[0];
  EXPECT_TRUE(contains(screen[1], "total 0/1 files")) << screen[1];
}

TEST_F(ProgressDisplayTest, FiguresFollowTheFilesAndTheClock) {
  ProgressDisplay d(mem_.console(), clock_, options({40 * kMB, 1 * kMB, 40 * kMB}));
  d.session_started(1);
  const FileMeta a = meta(1, "a.bin", 40 * kMB);
  d.file_started(a);
  clock_.advance(1s);
  d.file_progress(a, 20 * kMB);
  ProgressView v = d.view();
  EXPECT_EQ(v.file_done, 20 * kMB);
  EXPECT_DOUBLE_EQ(v.file_rate, 20.0);
  EXPECT_EQ(v.batch_done, 20 * kMB);
  EXPECT_EQ(v.batch_total, 81 * kMB);
  EXPECT_DOUBLE_EQ(v.batch_rate, 20.0);
  auto screen = replay_terminal(mem_.text());
  ASSERT_EQ(screen.size(), 2u);
  EXPECT_TRUE(contains(screen[0], " 50.0%  20.0/40.0 MB   20.00 MB/s  ETA 00:00:01")) << screen[0];
  EXPECT_TRUE(contains(screen[1], "total 0/3 files")) << screen[1];
  EXPECT_TRUE(contains(screen[1], " 24.7%  20.0/81.0 MB   20.00 MB/s  ETA 00:00:03")) << screen[1];

  clock_.advance(1s);
  d.file_progress(a, 40 * kMB);
  d.file_sent(a, {});
  // The second file cannot be opened: it fails without an id and is never current, yet its
  // listed size counts as done.
  d.file_failed(meta(0, "b.bin", 0), "cannot read 'b.bin': Permission denied");
  v = d.view();
  EXPECT_FALSE(v.has_file);
  EXPECT_EQ(v.files_done, 2u);
  EXPECT_EQ(v.files_failed, 1u);
  EXPECT_EQ(v.batch_done, 41 * kMB);
  clock_.advance(1s);
  d.idle();  // nothing else comes: the display is brought up to date all the same
  screen = replay_terminal(mem_.text());
  ASSERT_EQ(screen.size(), 1u);
  EXPECT_TRUE(contains(screen[0], "total 2/3 files, 1 failed")) << screen[0];

  // The rate is over the last few seconds: it falls to 0 when nothing moves.
  clock_.advance(10s);
  EXPECT_DOUBLE_EQ(d.view().batch_rate, 0.0);
  d.idle();
  EXPECT_DOUBLE_EQ(d.view().batch_rate, 0.0);
}

TEST_F(ProgressDisplayTest, RepeatCountsEveryCopy) {
  ProgressOptions o = options({10 * kMB});
  o.copies = 3;
  ProgressDisplay d(mem_.console(), clock_, std::move(o));
  d.session_started(1);
  const FileMeta f = meta(1, "f", 10 * kMB);
  d.file_started(f);
  d.file_progress(f, 15 * kMB);  // the second copy, half way
  const ProgressView v = d.view();
  EXPECT_EQ(v.file_total, 30 * kMB);
  EXPECT_EQ(v.batch_total, 30 * kMB);
  EXPECT_EQ(v.batch_done, 15 * kMB);
}

class FakeQueue final : public FileSource {
 public:
  std::optional<SourceFile> next(std::stop_token) override { return std::nullopt; }
  std::string describe() const override { return "a fake queue"; }
  std::optional<Backlog> backlog() const override { return Backlog{4, 8 * kMB, std::nullopt}; }
};

TEST_F(ProgressDisplayTest, AnOpenEndedSourceGivesItsBacklog) {
  FakeQueue queue;
  ProgressOptions o;
  o.sources = {&queue};
  o.columns = [] { return size_t{120}; };
  o.interval = 0ms;  // every callback redraws
  ProgressDisplay d(mem_.console(), clock_, std::move(o));
  d.session_started(1);
  const FileMeta f = meta(1, "in/x.bin", 4 * kMB);
  d.file_started(f);
  clock_.advance(1s);
  d.file_progress(f, 4 * kMB);
  d.file_sent(f, {});
  const ProgressView v = d.view();
  EXPECT_FALSE(v.files_total);
  EXPECT_FALSE(v.batch_total);
  EXPECT_EQ(v.batch_done, 4 * kMB);
  ASSERT_TRUE(v.backlog);
  EXPECT_EQ(v.backlog->files, 4u);
  const auto screen = replay_terminal(mem_.text());
  ASSERT_EQ(screen.size(), 1u);
  EXPECT_EQ(screen[0], "total 1 files  4.0 MB sent    4.00 MB/s  queued 4 files, 8.0 MB");
}

TEST_F(ProgressDisplayTest, FilesSentAtOnceOnSeveralLanesAllCount) {
  FakeQueue queue;
  ProgressOptions o;
  o.sources = {&queue};
  o.columns = [] { return size_t{120}; };
  ProgressDisplay d(mem_.console(), clock_, std::move(o));
  d.session_started(1);
  const FileMeta a = meta(1, "a.bin", 4 * kMB);
  const FileMeta b = meta(2, "b.bin", 4 * kMB);
  d.file_started(a);
  d.file_started(b);  // on another lane: the file line shows it, the batch counts both
  d.file_progress(a, 1 * kMB);
  d.file_progress(b, 2 * kMB);
  d.file_progress(a, 3 * kMB);
  ProgressView v = d.view();
  EXPECT_EQ(v.file_name, "b.bin");
  EXPECT_EQ(v.file_done, 2 * kMB);
  EXPECT_EQ(v.batch_done, 5 * kMB);
  d.file_sent(a, {});
  d.file_progress(b, 4 * kMB);
  d.file_sent(b, {});
  v = d.view();
  EXPECT_EQ(v.batch_done, 7 * kMB);
  EXPECT_EQ(v.files_done, 2u);
  EXPECT_FALSE(v.has_file);
}

TEST_F(ProgressDisplayTest, AnUrgentFileOvertakingABulkOneIsShownThenTheBulkAgain) {
  ProgressOptions o;
  o.columns = [] { return size_t{120}; };
  ProgressDisplay d(mem_.console(), clock_, std::move(o));
  d.session_started(1);
  FileMeta bulk = meta(1, "big.bin", 8 * kMB);
  bulk.set_channel("bulk");
  FileMeta urgent = meta(2, "alarm.txt", 1 * kMB);
  urgent.set_channel("urgent");
  d.file_started(bulk);
  clock_.advance(std::chrono::seconds(1));
  d.file_progress(bulk, 2 * kMB);
  d.file_started(urgent);  // interleaved on the same lane: the file line shows it
  d.file_progress(urgent, 1 * kMB);
  EXPECT_EQ(d.view().file_name, "urgent/alarm.txt");
  d.file_sent(urgent, {});
  clock_.advance(std::chrono::seconds(1));
  d.file_progress(bulk, 4 * kMB);
  const ProgressView v = d.view();
  ASSERT_TRUE(v.has_file) << "the bulk file is still on its way";
  EXPECT_EQ(v.file_name, "bulk/big.bin");
  EXPECT_EQ(v.file_done, 4 * kMB);
  EXPECT_DOUBLE_EQ(v.file_rate, 2.0) << "its rate since it started, 2 s ago";
  EXPECT_EQ(v.batch_done, 5 * kMB);
}

TEST_F(ProgressDisplayTest, FollowsTheTerminalWidth) {
  ProgressDisplay d(mem_.console(), clock_, options({40 * kMB}));
  d.session_started(1);
  const FileMeta f = meta(1, "a-rather-long-name-for-a-file.bin", 40 * kMB);
  d.file_started(f);
  for (size_t width : {200u, 100u, 50u, 30u, 12u}) {
    columns_ = width;
    clock_.advance(1s);
    d.file_progress(f, 10 * kMB);
    for (const auto& row : replay_terminal(mem_.text())) EXPECT_LT(row.size(), width) << row;
  }
}

TEST_F(ProgressDisplayTest, ALogLineErasesTheDisplayAndItIsDrawnAgainBelow) {
  auto logger =
      std::make_shared<spdlog::logger>("progress_test", common::make_console_sink(mem_.console()));
  logger->set_pattern("%v");
  ProgressDisplay d(mem_.console(), clock_, options({40 * kMB}));
  logger->info("Info: before the session");
  d.session_started(1);
  const FileMeta f = meta(1, "a.bin", 40 * kMB);
  d.file_started(f);
  clock_.advance(1s);
  d.file_progress(f, 10 * kMB);
  const size_t before = mem_.text().size();
  logger->info("Warn: something happened");
  const std::string out = mem_.text();
  // The line comes right after the display is erased (both rows, from the bottom up) and the
  // display follows it, whole.
  const std::string written = out.substr(before);
  EXPECT_TRUE(written.starts_with("\r\x1b[K\x1b[A\x1b[KWarn: something happened\n\x1b[?7l"))
      << written;
  EXPECT_TRUE(written.ends_with("\x1b[?7h")) << written;
  auto screen = replay_terminal(out);
  ASSERT_EQ(screen.size(), 4u);
  EXPECT_EQ(screen[0], "Info: before the session");
  EXPECT_EQ(screen[1], "Warn: something happened");
  EXPECT_TRUE(screen[2].starts_with("a.bin")) << screen[2];
  EXPECT_TRUE(screen[3].starts_with("total 0/1 files")) << screen[3];

  // The session ends: the display goes, the log lines stay, and later lines are plain.
  d.file_progress(f, 40 * kMB);
  d.file_sent(f, {});
  d.session_finished(1);
  logger->info("Info: session done");
  screen = replay_terminal(mem_.text());
  EXPECT_EQ(screen, (std::vector<std::string>{"Info: before the session",
                                              "Warn: something happened", "Info: session done"}));
  EXPECT_TRUE(mem_.text().ends_with("\r\x1b[K\x1b[A\x1b[KInfo: session done\n"));
  // Nothing more is drawn after the session.
  clock_.advance(1s);
  d.idle();
  EXPECT_TRUE(mem_.text().ends_with("Info: session done\n"));
}

TEST_F(ProgressDisplayTest, DestroyedWhileShownItErasesItself) {
  {
    ProgressDisplay d(mem_.console(), clock_, options({1}));
    d.session_started(1);
    EXPECT_EQ(replay_terminal(mem_.text()).size(), 1u);
  }
  EXPECT_TRUE(replay_terminal(mem_.text()).empty());
  // And it is no longer the console's overlay: a line now is written alone.
  const size_t before = mem_.text().size();
  mem_.console().write_line("plain\n");
  EXPECT_EQ(mem_.text().substr(before), "plain\n");
}

}  // namespace
}  // namespace ddft::sender
