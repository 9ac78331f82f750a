// The transport vocabulary: endpoints parsed from the command line, and the datagram sink and
// source interfaces (exercised through a small in-memory pair: what the interface promises by
// default, and that a batch goes through it whole).
#include "common/transport.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <vector>

namespace ddft::common {
namespace {

TEST(Endpoint, Parses) {
  Endpoint e;
  std::string err;
  ASSERT_TRUE(parse_endpoint("127.0.0.1:5000", &e, &err));
  EXPECT_EQ(e.host, "127.0.0.1");
  EXPECT_EQ(e.port, 5000);
  ASSERT_TRUE(parse_endpoint("[::1]:6000", &e, &err));
  EXPECT_EQ(e.host, "::1");
  EXPECT_EQ(e.to_string(), "[::1]:6000");
  ASSERT_TRUE(parse_endpoint("localhost:1", &e, &err));
  for (const char* bad : {"", "127.0.0.1", ":5000", "host:", "host:65536", "host:5x", "::1:80",
                          "[::1]5000", "[::1"}) {
    EXPECT_FALSE(parse_endpoint(bad, &e, &err)) << bad;
    EXPECT_FALSE(err.empty());
  }
}

// A sink and a source joined by a queue: the least a transport must do.
class Loop final : public DatagramSink, public DatagramSource {
 public:
  std::error_code send(std::span<const std::span<const uint8_t>> datagrams, size_t* sent) override {
    for (const auto& d : datagrams) queue_.emplace_back(d.begin(), d.end());
    *sent = datagrams.size();
    return {};
  }
  std::error_code receive(std::span<const std::span<uint8_t>> bufs, std::span<size_t> lens,
                          size_t* count, std::chrono::milliseconds) override {
    *count = 0;
    while (*count < bufs.size() && !queue_.empty()) {
      const auto& d = queue_.front();
      const size_t n = std::min(d.size(), bufs[*count].size());
      std::memcpy(bufs[*count].data(), d.data(), n);
      lens[(*count)++] = n;
      queue_.pop_front();
    }
    return {};
  }

 private:
  std::deque<std::vector<uint8_t>> queue_;
};

TEST(Transport, ABatchGoesThroughTheInterfacesWhole) {
  Loop loop;
  DatagramSink& sink = loop;
  DatagramSource& source = loop;
  EXPECT_EQ(source.link_drops(), -1) << "unknown unless a transport says";
  EXPECT_EQ(source.peer(), "");
  const std::vector<uint8_t> a = {1, 2, 3}, b = {4};
  const std::span<const uint8_t> batch[] = {a, b};
  size_t sent = 0;
  ASSERT_FALSE(sink.send(batch, &sent));
  EXPECT_EQ(sent, 2u);
  std::vector<uint8_t> x(16), y(16), z(16);
  const std::span<uint8_t> bufs[] = {x, y, z};
  size_t lens[3] = {};
  size_t count = 0;
  ASSERT_FALSE(source.receive(bufs, lens, &count, std::chrono::milliseconds(0)));
  ASSERT_EQ(count, 2u);
  EXPECT_EQ(std::vector<uint8_t>(x.begin(), x.begin() + lens[0]), a);
  EXPECT_EQ(std::vector<uint8_t>(y.begin(), y.begin() + lens[1]), b);
}

TEST(Endpoint, ToStringBracketsOnlyIpv6) {
  EXPECT_EQ((Endpoint{"127.0.0.1", 5000}).to_string(), "127.0.0.1:5000");
  EXPECT_EQ((Endpoint{"::1", 6000}).to_string(), "[::1]:6000");
}

}  // namespace
}  // namespace ddft::common
