// Logging: --log-format json and --syslog (the formatter's lines are valid JSON whatever the
// message holds, the time is local ISO 8601 with milliseconds and offset, and a reopened log file
// (SIGHUP) keeps the format), the options as both programs register them, and the Console that
// keeps a redrawn overlay (the progress display) out of the way of whole log lines.
#include "common/logging.hpp"

#include <gtest/gtest.h>
#include <spdlog/sinks/syslog_sink.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <vector>

#include "support/files.hpp"
#include "support/json_check.hpp"
#include "support/json_matchers.hpp"
#include "support/scoped_tz.hpp"
#include "support/scratch_fs.hpp"

namespace ddft::common {
namespace {
namespace fs = std::filesystem;
using ddft::testing::read_file;
using testing::JsonChecker;
using testing::JsonHas;
using testing::JsonText;
using testing::JsonValue;

using testing::ScopedTz;

// 2026-11-22T17:20:01.123Z plus `ms` milliseconds.
spdlog::log_clock::time_point at(int64_t ms = 0) {
  std::tm tm{};
  tm.tm_year = 2026 - 1900;
  tm.tm_mon = 10;
  tm.tm_mday = 22;
  tm.tm_hour = 17;
  tm.tm_min = 20;
  tm.tm_sec = 1;
  const auto t = std::chrono::system_clock::from_time_t(::timegm(&tm));
  return t + std::chrono::milliseconds(123 + ms);
}

std::string format(std::string_view payload, spdlog::level::level_enum level = spdlog::level::info,
                   spdlog::log_clock::time_point when = at()) {
  JsonLogFormatter f("dd_file_receive");
  spdlog::details::log_msg msg(when, spdlog::source_loc{}, "ddft", level,
                               spdlog::string_view_t(payload.data(), payload.size()));
  spdlog::memory_buf_t out;
  f.format(msg, out);
  return std::string(out.data(), out.size());
}

TEST(JsonLogFormatter, OneExactObjectPerLine) {
  ScopedTz tz("CET-1CEST,M3.5.0,M10.5.0/3");  // November: +01:00
  EXPECT_EQ(format("File: a.txt, Trans: 5 (bytes), Key: 0x6999CF78, B2B Passed"),
            "{\"time\":\"2026-11-22T18:20:01.123+01:00\",\"level\":\"info\",\"program\":"
            "\"dd_file_receive\",\"msg\":\"File: a.txt, Trans: 5 (bytes), Key: 0x6999CF78, B2B "
            "Passed\"}\n");
}

TEST(JsonLogFormatter, TimeIsLocalWithMillisecondsAndTheOffset) {
  {
    ScopedTz tz("UTC0");
    EXPECT_THAT(format("x"), JsonHas("time", "2026-11-22T17:20:01.123+00:00"));
    EXPECT_THAT(format("x", spdlog::level::info, at(-123 + 7)),
                JsonHas("time", "2026-11-22T17:20:01.007+00:00"));
    EXPECT_THAT(format("x", spdlog::level::info, at(877)),
                JsonHas("time", "2026-11-22T17:20:02.000+00:00"));
  }
  {
    ScopedTz tz("<-0330>3:30");  // behind UTC: a negative offset with minutes
    EXPECT_THAT(format("x"), JsonHas("time", "2026-11-22T13:50:01.123-03:30"));
  }
  {
    ScopedTz tz("<+0545>-5:45");
    EXPECT_THAT(format("x"), JsonHas("time", "2026-11-22T23:05:01.123+05:45"));
  }
}

TEST(JsonLogFormatter, LevelNamesAreLowerCase) {
  const std::pair<spdlog::level::level_enum, const char*> levels[] = {
      {spdlog::level::trace, "trace"}, {spdlog::level::debug, "debug"},
      {spdlog::level::info, "info"},   {spdlog::level::warn, "warning"},
      {spdlog::level::err, "error"},   {spdlog::level::critical, "critical"}};
  for (const auto& [level, name] : levels) {
    const auto obj = JsonChecker::parse_flat_object(format("x", level));
    ASSERT_TRUE(obj) << format("x", level);
    EXPECT_EQ(obj->at("level"), name);
  }
}

TEST(JsonLogFormatter, OddMessagesStayOneValidObjectAndRoundTrip) {
  const std::string odd[] = {
      "",
      "Error: refused file \"a\\b\": quotes and backslashes",
      "tab\there, newline\nthere, carriage return\r, bell\a, escape\x1b[31m, del\x7f",
      std::string("a NUL\0inside", 12),
      "UTF-8: caf\xc3\xa9, \xe2\x82\xac, \xf0\x9f\x93\x81 file.txt",
      "{\"looks\":\"like json\"}, [1,2], </script>, \\u0041",
      std::string(10000, 'x'),
  };
  for (const std::string& m : odd) {
    const std::string line = format(m, spdlog::level::warn);
    ASSERT_FALSE(line.empty());
    EXPECT_EQ(line.back(), '\n');
    EXPECT_EQ(line.find('\n'), line.size() - 1) << "one line: " << line;
    std::string error;
    const auto obj = JsonChecker::parse_flat_object(line, &error);
    ASSERT_TRUE(obj) << error << ": " << line;
    EXPECT_EQ(obj->size(), 4u);
    EXPECT_EQ(obj->at("msg"), m) << line;
    EXPECT_EQ(obj->at("program"), "dd_file_receive");
    EXPECT_EQ(obj->at("level"), "warning");
  }
}

TEST(JsonLogFormatter, BytesThatAreNotUtf8StayValidJson) {
  // A file name from the wire may hold any byte: each invalid one is escaped, never passed raw.
  const std::string bad[] = {"\xff\xfe name",
                             "cut \xe2\x82",
                             "overlong \xc0\xaf",
                             "\x80",
                             "surrogate \xed\xa0\x80",
                             "overlong \xe0\x80\xaf",
                             "past U+10FFFF \xf4\x90\x80\x80"};
  for (const std::string& m : bad) {
    const std::string line = format(m);
    std::string error;
    EXPECT_TRUE(JsonChecker::parse_flat_object(line, &error)) << error << ": " << line;
  }
  const auto obj = JsonChecker::parse_flat_object(format("\xff"));
  ASSERT_TRUE(obj);
  EXPECT_EQ(obj->at("msg"), "\xc3\xbf");  // \u00ff: the byte's value, visible
}

TEST(JsonChecker, RefusesWhatIsNotOneFlatObject) {
  // The checker the tests rely on must be able to fail.
  for (const char* bad : {"", "{", "{\"a\":\"b\"", "{\"a\":\"b\"}x", "{\"a\":\"\n\"}", "{'a':1}",
                          "{\"a\":\"\\x\"}", "{\"a\":01}", "{\"a\":[1]}", "{\"a\":\"b\",}",
                          "{\"a\":1,\"a\":2}", "{\"a\":\"\xff\"}", "{\"a\":\"\\ud800\"}"}) {
    EXPECT_FALSE(JsonChecker::parse_flat_object(bad)) << bad;
  }
  const auto ok = JsonChecker::parse_flat_object(
      R"( {"s":"a\"b\\c\/\u00e9\ud83d\udcc1","n":-1.5e3,"t":true,"z":null} )");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->at("s"), "a\"b\\c/\xc3\xa9\xf0\x9f\x93\x81");
  EXPECT_EQ(ok->at("n"), "-1.5e3");
}

TEST(JsonChecker, AnyObjectKeepsEachMembersKindAndOneTextPerValue) {
  const auto rec = JsonChecker::parse_object(
      "{\n  \"name\": \"a \\\"b\\\"\",\n  \"lane\": 0,\n  \"ranges\": [[0, 4000], [5000, 6000]],\n"
      "  \"exact\": false,\n  \"key\": null,\n  \"inner\": {\"s\": \"x\", \"a\": []}\n}\n");
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->at("name").kind, JsonValue::Kind::kString);
  EXPECT_EQ(rec->at("name").text, "a \"b\"");
  EXPECT_EQ(rec->at("lane").kind, JsonValue::Kind::kNumber);
  EXPECT_EQ(rec->at("lane").text, "0");
  EXPECT_EQ(rec->at("ranges").kind, JsonValue::Kind::kArray);
  EXPECT_EQ(rec->at("ranges").text, "[[0,4000],[5000,6000]]");
  EXPECT_EQ(rec->at("exact").kind, JsonValue::Kind::kBool);
  EXPECT_EQ(rec->at("key").kind, JsonValue::Kind::kNull);
  EXPECT_EQ(rec->at("inner").kind, JsonValue::Kind::kObject);
  EXPECT_EQ(rec->at("inner").text, "{\"s\":\"x\",\"a\":[]}");
  const std::vector<std::string> bad = {"{\"a\":[1,]}", "{\"a\":[1}", "{\"a\":{\"b\"}}", "[1]",
                                        std::string(40, '[') + std::string(40, ']')};
  for (const std::string& b : bad) {
    EXPECT_FALSE(JsonChecker::parse_object(b)) << b;
  }
  EXPECT_FALSE(
      JsonChecker::parse_object("{\"a\":" + std::string(40, '[') + std::string(40, ']') + "}"))
      << "nested too deep";
}

// JsonHas fails on the wrong member or the wrong kind, where a search of the text would pass.
TEST(JsonChecker, JsonHasLooksAtTheNamedMemberAndItsKind) {
  using ::testing::Contains;
  using ::testing::Not;
  using ::testing::StartsWith;
  const std::string sent = R"({"reason":"not \"status\":\"failed\"","status":"sent","lane":0})";
  EXPECT_THAT(sent, JsonHas("status", "sent"));
  EXPECT_THAT(sent, Not(JsonHas("status", "failed")));
  EXPECT_THAT(sent, JsonHas("lane", 0));
  EXPECT_THAT(sent, Not(JsonHas("lane", "0")));
  EXPECT_THAT(R"({"lane":"0"})", Not(JsonHas("lane", 0)));
  EXPECT_THAT(sent, Not(JsonHas("missing", "sent")));
  EXPECT_THAT(sent, JsonHas("reason", StartsWith("not ")));
  EXPECT_THAT("not json", Not(JsonHas("status", "sent")));
  EXPECT_THAT(
      R"({"r": [[0, 4000]], "x": {"y": true}, "k": null})",
      ::testing::AllOf(JsonHas("r", JsonText("[[0,4000]]")), JsonHas("x", JsonHas("y", true)),
                       JsonHas("k", nullptr), Not(JsonHas("r", JsonText("[[0,400]]")))));
  const std::vector<std::string> records = {R"({"name":"a.bin"})", R"({"name":"b.bin"})"};
  EXPECT_THAT(records, Contains(JsonHas("name", "b.bin")));
  EXPECT_THAT(records, Not(Contains(JsonHas("name", "c.bin"))));
  // What a failure says.
  ::testing::StringMatchResultListener why;
  EXPECT_FALSE(::testing::ExplainMatchResult(JsonHas("lane", "0"), sent, &why));
  EXPECT_EQ(why.str(), "whose \"lane\" is the number 0");
  EXPECT_THROW(JsonHas("r", JsonText("[1,")), std::invalid_argument);
}

class SetupLogging : public ::testing::Test {
 protected:
  void SetUp() override { old_ = spdlog::default_logger(); }
  void TearDown() override { spdlog::set_default_logger(old_); }
  std::shared_ptr<spdlog::logger> old_;
  testing::ScratchDir scratch_{"log"};
  fs::path dir_ = scratch_.path();
};

TEST_F(SetupLogging, JsonLogFileSurvivesAReopen) {
  LogConfig cfg;
  cfg.quiet = true;
  cfg.log_file = (dir_ / "r.log").string();
  cfg.format = "json";
  setup_logging(cfg, "dd_file_send");
  spdlog::info("Info: before \"rotation\"");
  fs::rename(dir_ / "r.log", dir_ / "r.log.1");  // what logrotate does, then SIGHUP
  reopen_log_file();
  spdlog::warn("Warn: after\nrotation");
  spdlog::default_logger()->flush();
  const std::string before = read_file(dir_ / "r.log.1");
  const std::string after = read_file(dir_ / "r.log");
  const auto b = JsonChecker::parse_flat_object(before);
  const auto a = JsonChecker::parse_flat_object(after);
  ASSERT_TRUE(b) << before;
  ASSERT_TRUE(a) << after;
  EXPECT_EQ(b->at("msg"), "Info: before \"rotation\"");
  EXPECT_EQ(a->at("msg"), "Warn: after\nrotation");
  EXPECT_EQ(a->at("program"), "dd_file_send");
  EXPECT_EQ(a->at("level"), "warning");
}

TEST_F(SetupLogging, TextFormatIsTheDftsLine) {
  LogConfig cfg;
  cfg.quiet = true;
  cfg.log_file = (dir_ / "r.log").string();
  setup_logging(cfg, "dd_file_receive");
  spdlog::info("Info: plain");
  fs::rename(dir_ / "r.log", dir_ / "r.log.1");
  reopen_log_file();
  spdlog::info("Info: reopened");
  const std::string line = read_file(dir_ / "r.log.1");
  ASSERT_EQ(line.size(), 15 + std::string("Info: plain\n").size()) << line;
  EXPECT_EQ(line.substr(2, 1), "/");
  EXPECT_EQ(line.substr(15), "Info: plain\n");
  EXPECT_EQ(read_file(dir_ / "r.log").substr(15), "Info: reopened\n");
}

TEST_F(SetupLogging, SyslogAddsASinkThatGetsTheBareMessage) {
  LogConfig cfg;
  cfg.quiet = true;
  cfg.syslog = true;
  cfg.format = "json";
  auto logger = setup_logging(cfg, "dd_file_receive");
  ASSERT_EQ(logger->sinks().size(), 1u);
  EXPECT_TRUE(std::dynamic_pointer_cast<spdlog::sinks::syslog_sink_mt>(logger->sinks()[0]));
  spdlog::info("Info: to syslog");  // must not fail without a syslog daemon
  cfg.syslog = false;
  EXPECT_TRUE(setup_logging(cfg, "dd_file_receive")->sinks().empty());
}

TEST_F(SetupLogging, UnknownFormatIsRefused) {
  LogConfig cfg;
  cfg.quiet = true;
  cfg.format = "xml";
  EXPECT_THROW(setup_logging(cfg, "x"), spdlog::spdlog_ex);
}

TEST(LogOptions, ParseFromTheCommandLineAndAConfigFile) {
  {
    LogConfig cfg;
    CLI::App app;
    add_log_options(app, cfg);
    const char* argv[] = {"x", "--syslog", "--log-format", "json", "--log-file", "/tmp/l", "-v"};
    app.parse(7, const_cast<char**>(argv));
    EXPECT_TRUE(cfg.syslog);
    EXPECT_EQ(cfg.format, "json");
    EXPECT_EQ(cfg.log_file, "/tmp/l");
    EXPECT_TRUE(cfg.verbose);
  }
  {
    LogConfig cfg;
    CLI::App app;
    add_log_options(app, cfg);
    const char* argv[] = {"x", "--log-format", "xml"};
    EXPECT_THROW(app.parse(3, const_cast<char**>(argv)), CLI::ValidationError);
  }
  {
    const testing::ScratchDir dir("logopt");
    const fs::path conf = dir.path() / "log.conf";
    std::ofstream(conf) << "syslog = true\nlog-format = \"json\"\n";
    LogConfig cfg;
    CLI::App app;
    app.set_config("--config");
    add_log_options(app, cfg);
    const std::string path = conf.string();
    const char* argv[] = {"x", "--config", path.c_str()};
    app.parse(3, const_cast<char**>(argv));
    EXPECT_TRUE(cfg.syslog);
    EXPECT_EQ(cfg.format, "json");
  }
}

// An overlay that says when it is erased and drawn, into the console's own stream.
class MarkOverlay : public Console::Overlay {
 public:
  void erase(std::FILE* out) override { std::fputs("<erase>", out); }
  void draw(std::FILE* out) override { std::fputs("<draw>", out); }
};

std::string contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string s;
  char buf[256];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
  return s;
}

TEST(Console, WritesWholeLinesAroundItsOverlay) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    Console console(f);
    EXPECT_EQ(console.file(), f);
    console.write_line("one\n");
    MarkOverlay overlay;
    console.set_overlay(&overlay);
    console.write_line("two\n");
    console.locked([](std::FILE* out) { std::fputs("[locked]", out); });
    console.set_overlay(nullptr);
    console.write_line("three\n");
    console.flush();
  }
  EXPECT_EQ(contents(f), "one\n<erase>two\n<draw>[locked]three\n");
  std::fclose(f);
}

TEST(Console, StdoutConsoleIsOneObjectOnStdout) {
  EXPECT_EQ(&stdout_console(), &stdout_console());
  EXPECT_EQ(stdout_console().file(), stdout);
}

}  // namespace
}  // namespace ddft::common
