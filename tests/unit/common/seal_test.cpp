// Sealed datagrams: the key file, the key derivation, and what sealing and opening guarantee.
#include "common/seal.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "support/scratch_fs.hpp"

namespace ddft::common {
namespace {
namespace fs = std::filesystem;

class KeyFileTest : public ::testing::Test {
 protected:
  void SetUp() override {}
  std::string write(const std::string& name, const std::string& bytes, mode_t mode = 0600) {
    const auto p = dir_ / name;
    std::ofstream(p, std::ios::binary) << bytes;
    ::chmod(p.c_str(), mode);
    return p.string();
  }
  std::string error_of(const std::string& path) {
    try {
      load_key_file(path);
    } catch (const std::exception& e) {
      return e.what();
    }
    return "";
  }
  testing::ScratchDir scratch_{"key"};
  fs::path dir_ = scratch_.path();
};

std::string raw_key() {
  std::string k(32, '\0');
  for (size_t i = 0; i < k.size(); ++i) k[i] = static_cast<char>(i * 7 + 1);
  return k;
}

TEST_F(KeyFileTest, ReadsRawAndHexKeys) {
  const Key raw = load_key_file(write("raw", raw_key()));
  EXPECT_EQ(std::string(raw.begin(), raw.end()), raw_key());
  std::string hex;
  for (unsigned char c : raw_key()) hex += fmt::format("{:02x}", c);
  EXPECT_EQ(load_key_file(write("hex", hex + "\n")), raw);
  EXPECT_EQ(load_key_file(write("hexcrlf", hex + "\r\n")), raw);
  EXPECT_EQ(load_key_file(write("hex_nolf", hex)), raw);
  EXPECT_EQ(load_key_file(write("readonly", raw_key(), 0400)), raw);
}

TEST_F(KeyFileTest, RefusesEveryBadFileInOneLine) {
  const std::string cases[][2] = {
      {write("group", raw_key(), 0640), "is open to group or others (mode 0640)"},
      {write("world", raw_key(), 0604), "is open to group or others (mode 0604)"},
      {write("short", std::string(31, 'x')), "holds 31 bytes: a key is 32 random bytes or 64 hex"},
      {write("long", std::string(200, 'a')), "holds more than 71 bytes"},
      {write("badhex", std::string(63, 'a') + "g\n"), "holds 65 bytes"},
      {write("zeros", std::string(32, '\0')), "is all zeros"},
      {write("empty", ""), "holds 0 bytes"},
      {(dir_ / "missing").string(), "cannot be read: No such file or directory"},
      {dir_.string(), "is not a regular file"},
  };
  for (const auto& [path, want] : cases) {
    const std::string e = error_of(path);
    EXPECT_NE(e.find(want), std::string::npos) << path << ": " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
    EXPECT_NE(e.find(path), std::string::npos) << "names the file: " << e;
  }
}

std::vector<uint8_t> hex_bytes(std::string_view h) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < h.size(); i += 2) {
    out.push_back(static_cast<uint8_t>(std::stoi(std::string(h.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

TEST(Hkdf, MatchesRfc5869TestCase1) {
  const auto ikm = hex_bytes("0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b");
  const auto salt = hex_bytes("000102030405060708090a0b0c");
  const auto info = hex_bytes("f0f1f2f3f4f5f6f7f8f9");
  std::vector<uint8_t> okm(42);
  hkdf_sha256(ikm, salt, info, okm);
  EXPECT_EQ(okm, hex_bytes("3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf"
                           "34007208d5b887185865"));
}

TEST(Hkdf, SessionKeysDifferBySaltAndSession) {
  Key psk{};
  psk.fill(9);
  Salt a{}, b{};
  b[15] = 1;
  EXPECT_NE(derive_session_key(psk, a, 1), derive_session_key(psk, b, 1));
  EXPECT_NE(derive_session_key(psk, a, 1), derive_session_key(psk, a, 2));
  EXPECT_EQ(derive_session_key(psk, a, 1), derive_session_key(psk, a, 1));
}

TEST(SessionSalt, StartsWithTheClockAndIsRandom) {
  const Salt a = make_session_salt();
  const Salt b = make_session_salt();
  EXPECT_LE(salt_start_ns(a), salt_start_ns(b));
  EXPECT_GT(salt_start_ns(a), uint64_t{1'700'000'000} * 1'000'000'000);  // after 2023
  EXPECT_NE(a, b);
}

// A datagram as the sender builds it before sealing.
std::vector<uint8_t> inner(uint64_t session, uint64_t seq, const std::string& text) {
  Header h;
  h.session_id = session;
  h.seq = seq;
  common::Abort a{7, text};
  std::vector<uint8_t> b(1024);
  b.resize(encode_abort(h, a, b));
  return b;
}

struct Sealed {
  std::vector<uint8_t> bytes;
  Header header;
};

Sealed seal_one(Sealer& s, const std::vector<uint8_t>& in) {
  std::vector<uint8_t> buf(in.size() + kSealOverhead);
  std::copy(in.begin(), in.end(), buf.begin());
  buf.resize(s.seal(buf, in.size()));
  Packet p;
  EXPECT_EQ(decode_packet(buf, &p), DecodeStatus::kOk) << "a sealed datagram is well formed";
  return {buf, p.header};
}

class SealTest : public ::testing::TestWithParam<bool> {
 protected:
  SealTest() {
    psk_.fill(0x5a);
    salt_ = make_session_salt();
  }
  Key psk_;
  Salt salt_;
};

TEST_P(SealTest, OpensToTheExactInnerDatagram) {
  const bool encrypt = GetParam();
  Sealer s(psk_, 42, salt_, encrypt);
  Opener o({psk_});
  for (uint64_t seq = 5; seq < 8; ++seq) {
    const auto in = inner(42, seq, "the reason, in words " + std::to_string(seq));
    const Sealed sealed = seal_one(s, in);
    EXPECT_EQ(sealed.bytes.size(), in.size() + kSealOverhead);
    EXPECT_TRUE(sealed.header.flags & kFlagAuth);
    EXPECT_EQ((sealed.header.flags & kFlagEncrypt) != 0, encrypt);
    // The body: ciphertext when encrypting, the clear text for --auth-only.
    const bool clear =
        std::equal(in.begin() + kHeaderSize, in.end(), sealed.bytes.begin() + kHeaderSize);
    EXPECT_EQ(clear, !encrypt);
    std::vector<uint8_t> out(sealed.bytes.size());
    size_t n = 0;
    Salt got{};
    ASSERT_EQ(o.open(sealed.bytes, sealed.header, out, &n, &got), OpenStatus::kOk);
    out.resize(n);
    // Byte for byte but the checksum, which only FEC sources need (next test).
    ASSERT_EQ(out.size(), in.size());
    EXPECT_TRUE(std::equal(in.begin(), in.begin() + kHeaderSansChecksumSize, out.begin()));
    EXPECT_TRUE(std::equal(in.begin() + kHeaderSize, in.end(), out.begin() + kHeaderSize));
    EXPECT_EQ(got, salt_);
  }
  EXPECT_EQ(o.keys_derived(), 1u) << "one key per session, derived once";
}

TEST_P(SealTest, AnFecSourceOpensWithItsOwnChecksum) {
  Sealer s(psk_, 42, salt_, GetParam());
  Opener o({psk_});
  auto in = inner(42, 9, "an FEC source");
  poke_flags(in.data(), kFlagFec);
  reseal(in);
  const Sealed sealed = seal_one(s, in);
  std::vector<uint8_t> out(sealed.bytes.size());
  size_t n = 0;
  Salt salt{};
  ASSERT_EQ(o.open(sealed.bytes, sealed.header, out, &n, &salt), OpenStatus::kOk);
  out.resize(n);
  EXPECT_EQ(out, in) << "byte for byte, checksum included: FEC parity covers it";
}

TEST_P(SealTest, AnyChangedBitFailsTheTag) {
  Sealer s(psk_, 42, salt_, GetParam());
  Opener o({psk_});
  const Sealed sealed = seal_one(s, inner(42, 1, "tamper with me"));
  std::vector<uint8_t> out(sealed.bytes.size());
  for (size_t i = 0; i < sealed.bytes.size(); ++i) {
    // The checksum of the header: caught by decode_packet.
    if (i >= kHeaderSansChecksumSize && i < kHeaderSize) continue;
    for (int bit : {0, 1, 2, 7}) {
      auto bad = sealed.bytes;
      bad[i] ^= static_cast<uint8_t>(1 << bit);
      // As an attacker would: it is no secret.
      if (peek_flags(bad.data()) & kFlagAuth) reseal_header(bad);
      Packet p;
      if (decode_packet(bad, &p) != DecodeStatus::kOk) continue;  // e.g. a changed length
      size_t n = 0;
      Salt salt{};
      const OpenStatus st = o.open(bad, p.header, out, &n, &salt);
      EXPECT_NE(st, OpenStatus::kOk) << "byte " << i << " bit " << bit;
    }
  }
}

TEST_P(SealTest, AnotherKeyOrSessionFails) {
  Sealer s(psk_, 42, salt_, GetParam());
  const Sealed sealed = seal_one(s, inner(42, 1, "x"));
  Key other = psk_;
  other[0] ^= 1;
  Opener wrong({other});
  std::vector<uint8_t> out(sealed.bytes.size());
  size_t n = 0;
  Salt salt{};
  EXPECT_EQ(wrong.open(sealed.bytes, sealed.header, out, &n, &salt), OpenStatus::kBadTag);
  // Moved to another session id (header rewritten, checksum fixed): another key, another AAD.
  auto moved = sealed.bytes;
  poke_session_id(moved.data(), 43);
  reseal_header(moved);
  Packet p;
  ASSERT_EQ(decode_packet(moved, &p), DecodeStatus::kOk);
  Opener right({psk_});
  EXPECT_EQ(right.open(moved, p.header, out, &n, &salt), OpenStatus::kBadTag);
}

INSTANTIATE_TEST_SUITE_P(Modes, SealTest, ::testing::Values(true, false),
                         [](const auto& p) { return p.param ? "Encrypt" : "AuthOnly"; });

// A key rotation: the receiver holds the old and the new key; sessions sealed with either open,
// and it says which key did; a third key opens nothing.
TEST(Opener, OpensSessionsOfEitherKeyDuringARotation) {
  Key old_key{}, new_key{}, stranger{};
  old_key.fill(1);
  new_key.fill(2);
  stranger.fill(3);
  Opener o({old_key, new_key});
  struct Case {
    const Key* key;
    uint64_t session;
    OpenStatus want;
    size_t index;
  };
  for (const Case& c :
       {Case{&new_key, 50, OpenStatus::kOk, 1}, Case{&old_key, 51, OpenStatus::kOk, 0},
        Case{&stranger, 52, OpenStatus::kBadTag, 0}}) {
    Sealer s(*c.key, c.session, make_session_salt(), true);
    for (uint64_t seq = 0; seq < 3; ++seq) {
      const Sealed sealed = seal_one(s, inner(c.session, seq, "rotation"));
      std::vector<uint8_t> out(sealed.bytes.size());
      size_t n = 0, index = 99;
      Salt salt{};
      EXPECT_EQ(o.open(sealed.bytes, sealed.header, out, &n, &salt, &index), c.want);
      if (c.want == OpenStatus::kOk) {
        EXPECT_EQ(index, c.index);
      }
    }
  }
  // Two sessions opened: their keys derived once each (the new key's session tried one key, the
  // old key's two); the stranger's three datagrams two each, and none kept.
  EXPECT_EQ(o.keys_derived(), 1u + 2u + 3u * 2u);
}

TEST(Sealer, RefusesASeqThatDoesNotGrow) {
  Key psk{};
  psk.fill(1);
  Sealer s(psk, 42, make_session_salt(), true);
  seal_one(s, inner(42, 10, "a"));
  std::vector<uint8_t> again = inner(42, 10, "b");
  again.resize(again.size() + kSealOverhead);
  EXPECT_THROW(s.seal(again, again.size() - kSealOverhead), std::logic_error);
  std::vector<uint8_t> older = inner(42, 9, "c");
  older.resize(older.size() + kSealOverhead);
  EXPECT_THROW(s.seal(older, older.size() - kSealOverhead), std::logic_error);
  std::vector<uint8_t> no_room = inner(42, 11, "d");
  EXPECT_THROW(s.seal(no_room, no_room.size()), std::logic_error);
}

TEST(Opener, SaysWhatIsWrongWithUnsealedAndShortDatagrams) {
  Key psk{};
  psk.fill(1);
  Opener o({psk});
  const auto plain = inner(42, 1, "plain");
  Packet p;
  ASSERT_EQ(decode_packet(plain, &p), DecodeStatus::kOk);
  std::vector<uint8_t> out(2048);
  size_t n = 0;
  Salt salt{};
  EXPECT_EQ(o.open(plain, p.header, out, &n, &salt), OpenStatus::kNotSealed);
  // Claims a seal but has no room for one.
  std::vector<uint8_t> tiny(kHeaderSize + 8);
  Header h;
  h.flags = kFlagAuth;
  h.type = PacketType::kHeartbeat;
  h.payload_len = 8;
  p.header = h;
  EXPECT_EQ(o.open(tiny, p.header, out, &n, &salt), OpenStatus::kMalformed);
}

// Golden bytes of a sealed datagram (--auth-only, so that all but the checksum and the GCM tag
// can be written out by hand from the diagram in common/protocol.hpp): a heartbeat whose payload
// is followed by the trailer, salt then tag. A change to the trailer's layout breaks this test.
TEST(SealGolden, AuthOnlyHeartbeat) {
  const std::vector<uint8_t> want = {
      'D',  'D',  'F',  'T',                           // 0 magic
      0x01, 0x05, 0x38, 0x00,                          // 4 version 1, heartbeat, payload_len 56
      0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,  // 8 session_id
      0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,  // 16 seq
      0x02, 0x00, 0x00, 0x00,                          // 24 flags kFlagAuth, fec_pos 0
      0x83, 0x82, 0x53, 0x22,                          // 28 checksum (of the header only)
      0x00, 0x00, 0x00, 0x00,                          // +0 body: heartbeat flags 0
      0xE8, 0x03, 0x00, 0x00,                          // +4 interval_ms 1000
      0x4D, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // +8 packets_sent 77
      0x04, 0x00, 0x00, 0x00,                          // +16 files_announced 4
      0x00, 0x00, 0x00, 0x00,                          // +20 reserved
      0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,  // +24 salt
      0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F,  //
      0x43, 0xB2, 0x6E, 0x14, 0x75, 0xA0, 0x66, 0x04,  // +40 tag (AES-256-GCM)
      0xC0, 0x7E, 0x11, 0x7C, 0x44, 0x27, 0x5E, 0x4B,  //
  };
  Key psk;
  psk.fill(0x42);
  Salt salt;
  for (uint8_t i = 0; i < kSaltSize; ++i) salt[i] = i;
  Header h;
  h.session_id = 0x1122334455667788ull;
  h.seq = 0x0102030405060708ull;
  std::vector<uint8_t> buf(256);
  const size_t inner = encode_heartbeat(h, Heartbeat{0, 1000, 77, 4}, buf);
  Sealer sealer(psk, h.session_id, salt, false);
  buf.resize(sealer.seal(buf, inner));
  ASSERT_EQ(buf.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(int{buf[i]}, int{want[i]}) << "byte " << i;

  Packet p;
  ASSERT_EQ(decode_packet(want, &p), DecodeStatus::kOk);
  EXPECT_EQ(p.header.flags, kFlagAuth);
  EXPECT_EQ(p.header.payload_len, 24u + kSealOverhead);
  Opener opener({psk});
  std::vector<uint8_t> out(want.size());
  size_t n = 0;
  Salt got_salt{};
  ASSERT_EQ(opener.open(want, p.header, out, &n, &got_salt), OpenStatus::kOk);
  EXPECT_EQ(got_salt, salt);
  out.resize(n);
  reseal(out);  // without FEC the opener leaves the inner checksum as it came
  ASSERT_EQ(decode_packet(out, &p), DecodeStatus::kOk);
  EXPECT_EQ(p.header.flags, 0);
  Heartbeat hb;
  ASSERT_EQ(decode_heartbeat(p.payload, &hb), DecodeStatus::kOk);
  EXPECT_EQ(hb.interval_ms, 1000u);
  EXPECT_EQ(hb.packets_sent, 77u);
  EXPECT_EQ(hb.files_announced, 4u);
}

}  // namespace
}  // namespace ddft::common
