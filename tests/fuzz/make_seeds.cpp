// Writes the fuzz harnesses' seed corpora from the real encoders (common/protocol.hpp and the
// sender's FEC encoder), so that the fuzzers start from datagrams a sender really sends.
//
//   make_seeds DIR     (re)writes DIR/packet, DIR/announce, DIR/path and DIR/receiver; files
//                      already in those four folders are removed first
//
// The output is deterministic: run it again and git shows no change unless an encoder changed.
// scripts/fuzz.sh --seeds regenerates tests/fuzz/corpus with it. Each harness's input layout is
// described at the top of its fuzz_<name>.cpp.
#include <zstd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/history_wire.hpp"
#include "common/protocol.hpp"
#include "common/seal.hpp"
#include "fuzz_support.hpp"
#include "support/fake_sender.hpp"
#include "support/packet_builder.hpp"

namespace {
namespace fs = std::filesystem;
using namespace ddft::common;
using Bytes = std::vector<uint8_t>;

// Receiver-harness record flags (fuzz_receiver.cpp).
constexpr uint8_t kFix = 1;        // fix the header and reseal
constexpr uint8_t kPoll = 16;      // poll() after the datagram
constexpr uint8_t kRingDrop = 32;  // dropped in a full ring
uint8_t advance(unsigned step) { return static_cast<uint8_t>(step << 1); }  // 0..7

// Deterministic file contents.
// Log-like text of n bytes: what --compress shrinks.
std::string log_text(size_t n, uint32_t seed) {
  std::string s;
  for (uint32_t i = 0; s.size() < n; ++i) {
    s += "2026-11-26 INFO rtu-" + std::to_string((seed + i) % 7) + " polled " +
         std::to_string((i * 37 + seed) % 1000) + " points\n";
  }
  s.resize(n);
  return s;
}

std::string pattern(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (char& c : s) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<char>(x >> 24);
  }
  return s;
}

// The datagrams of one sender session, as dd_file_send builds them (the shared fake sender,
// with the seeds' own chunk size and mtime, which the checked-in corpus was made with).
class Session : public ddft::testing::FakeSender {
 public:
  explicit Session(uint64_t id, uint32_t chunk = 500)
      : FakeSender(id, chunk, 1'700'000'000'000'000'000) {}
};

// Re-stamps `in` as a sender with --fec sends it (window place, flag, sequence number) and adds
// each window's parity from the sender's own encoder.
std::vector<Bytes> with_fec(const std::vector<Bytes>& in, const FecParams& p, uint64_t session,
                            uint64_t* seq) {
  return ddft::testing::with_fec(in, p, session, seq, 2000);
}

// Seals each datagram as a sender with --key-file does (the harness's key, a fixed salt so that
// the output does not change from run to run).
std::vector<Bytes> sealed(const std::vector<Bytes>& in, uint64_t session, bool encrypt) {
  Salt salt{};
  store_le64(salt.data(), 1'700'000'000'000'000'000);
  for (size_t i = 8; i < salt.size(); ++i) salt[i] = static_cast<uint8_t>(i * 11);
  Sealer sealer(ddft::fuzz::fuzz_key(), session, salt, encrypt);
  return ddft::testing::seal_all(sealer, in);
}

// One receiver-harness input: a settings byte, then records.
class Script {
 public:
  explicit Script(uint8_t settings) : bytes_{settings} {}
  Script& add(const Bytes& d, uint8_t ctl = kFix) {
    bytes_.push_back(ctl);
    bytes_.push_back(static_cast<uint8_t>(d.size()));
    bytes_.push_back(static_cast<uint8_t>(d.size() >> 8));
    bytes_.insert(bytes_.end(), d.begin(), d.end());
    return *this;
  }
  Script& add(const std::vector<Bytes>& ds, uint8_t ctl = kFix) {
    for (const Bytes& d : ds) add(d, ctl);
    return *this;
  }
  // A zero-length record that only moves the clock and polls.
  Script& wait(unsigned step) { return add(Bytes{}, static_cast<uint8_t>(advance(step) | kPoll)); }
  const Bytes& bytes() const { return bytes_; }

 private:
  Bytes bytes_;
};

class Writer {
 public:
  explicit Writer(fs::path root) : root_(std::move(root)) {}
  void prepare(const std::string& harness) {
    const fs::path dir = root_ / harness;
    fs::create_directories(dir);
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.is_regular_file()) fs::remove(e.path());
    }
  }
  void put(const std::string& harness, const std::string& name, const Bytes& b) {
    std::ofstream out(root_ / harness / name, std::ios::binary);
    out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
    if (!out) throw std::runtime_error("cannot write " + (root_ / harness / name).string());
    ++count_;
  }
  size_t count() const { return count_; }

 private:
  fs::path root_;
  size_t count_ = 0;
};

Bytes with_ctl(uint8_t ctl, const Bytes& d) {
  Bytes b{ctl};
  b.insert(b.end(), d.begin(), d.end());
  return b;
}
Bytes text(uint8_t ctl, const std::string& s) {
  Bytes b{ctl};
  b.insert(b.end(), s.begin(), s.end());
  return b;
}
Bytes payload_of(const Bytes& d) { return Bytes(d.begin() + kHeaderSize, d.end()); }

// Paths from the wire: ordinary ones, and every kind the receiver must refuse or contain.
struct NamedPath {
  const char* name;
  std::string path;
};
std::vector<NamedPath> paths() {
  std::string deepest;  // 64 components: the deepest path accepted
  for (int i = 0; i < 63; ++i) deepest += "d/";
  std::string too_deep = deepest + "e/deep.bin";
  deepest += "deep.bin";
  std::string longest;  // 4096 bytes in 17 components of 240: the longest path accepted
  for (int i = 0; i < 16; ++i) longest += std::string(240, static_cast<char>('a' + i)) + "/";
  longest += std::string(240, 'z');
  std::string too_long = longest + "x";
  std::string many;  // 2048 components: far too deep
  for (int i = 0; i < 2047; ++i) many += "a/";
  many += "z";
  return {
      {"plain", "a.txt"},
      {"nested", "dir/sub/file.bin"},
      {"utf8", "caf\xc3\xa9/r\xc3\xa9sum\xc3\xa9.pdf"},
      {"dots-in-name", "a..b/..."},
      {"dotdot", "../x"},
      {"dotdot-inner", "a/../../x"},
      {"dot", "./a"},
      {"double-slash", "a//b"},
      {"trailing-slash", "a/"},
      {"absolute", "/etc/passwd"},
      {"temp-name", ".ddft-1-2.part"},
      {"temp-name-full", "d/.ddft-0123456789abcdef-1.part"},
      {"control-char", "a\nb"},
      {"escape-seq", "a\x1b[31m"},
      {"nul", std::string("a\0b", 3)},
      {"long-component", std::string(256, 'x')},
      {"component-255", std::string(255, 'y')},
      {"deepest", deepest},
      {"too-deep", too_deep},
      {"far-too-deep", many},
      {"longest", longest},
      {"too-long", too_long},
      {"state-file", ".ddft-session-state"},
      {"state-folder", ".ddft/outcomes"},
      {"lock-file", "sub/.ddft-lock"},
      {"symlink-dir", "link/escaped.txt"},
      {"symlink-dir-nested", "dir/link/escaped.txt"},
      {"symlink-file", "flink"},
      {"existing-file", "exists"},
      {"existing-folder", "dir"},
      {"failed-folder", ".failed"},
      {"into-failed-folder", ".failed/x"},
  };
}

void packet_seeds(Writer& w) {
  w.prepare("packet");
  Session s(0x1111);
  const std::string content = pattern(600, 1);
  w.put("packet", "announce-b2b", with_ctl(0, s.announce(1, "dir/a.bin", content.size())));
  w.put("packet", "announce-sha256",
        with_ctl(1, s.announce(2, "reports/2026/r.csv", 123456, VerifyType::kSha256, 3)));
  w.put("packet", "announce-none", with_ctl(0, s.announce(3, "x", 0, VerifyType::kNone)));
  const auto data = s.data(1, content);
  w.put("packet", "data-first", with_ctl(0, data.at(0)));
  w.put("packet", "data-last", with_ctl(1, data.at(1)));
  w.put("packet", "data-copy1", with_ctl(0, s.data(1, content.substr(0, 40), 1).at(0)));
  w.put("packet", "end-b2b", with_ctl(0, s.end(1, content)));
  w.put("packet", "end-sha256", with_ctl(1, s.end(2, content, VerifyType::kSha256, 1, 2)));
  w.put("packet", "end-none", with_ctl(0, s.end(3, "", VerifyType::kNone)));
  w.put("packet", "abort", with_ctl(0, s.abort(1, "file changed while it was read")));
  w.put("packet", "heartbeat", with_ctl(0, s.heartbeat(false)));
  w.put("packet", "heartbeat-final", with_ctl(1, s.heartbeat(true, 250)));
  uint64_t seq = 100;
  const auto fec = with_fec(s.file(4, "f.bin", pattern(1200, 2)), {4, 2, 2}, s.session(), &seq);
  for (const Bytes& d : fec) {
    if (peek_type(d.data()) == static_cast<uint8_t>(PacketType::kParity)) {
      w.put("packet", "parity", with_ctl(0, d));
      break;
    }
  }
  w.put("packet", "data-fec", with_ctl(0, fec.at(1)));
  Bytes bad_sum = s.heartbeat(false);
  bad_sum[kHeaderSansChecksumSize] ^= 1;  // the checksum's first byte
  w.put("packet", "bad-checksum", with_ctl(0, bad_sum));
  w.put("packet", "bad-checksum-fixed", with_ctl(1, bad_sum));
  w.put("packet", "too-short", with_ctl(0, Bytes(20, 0x44)));
  // After the others, so that their sequence numbers (and bytes) stay as they were.
  w.put("packet", "announce-repeat",
        with_ctl(0, s.repeat_announce(1, "dir/a.bin", content.size())));
  w.put("packet", "file-list",
        with_ctl(
            0, s.file_list({{1, "dir/a.bin", content}, {5, "torn.log", "", VerifyType::kB2B, true}},
                           0)));
  w.put("packet", "file-list-complete",
        with_ctl(1, s.file_list({{2, "reports/2026/r.csv", content, VerifyType::kSha256},
                                 {3, "x", "", VerifyType::kNone},
                                 {6, "gone.bin", "", VerifyType::kSha256, true}},
                                kListComplete)));
  const auto z = s.zdata(7, log_text(5000, 3), 2000);  // --compress: kZData pieces
  w.put("packet", "zdata-first", with_ctl(0, z.front()));
  w.put("packet", "zdata-last", with_ctl(1, z.back()));
  // The sender's id and where its lanes go: three lanes, the first two to one host.
  w.put("packet", "sender-info", with_ctl(0, s.sender_info(0xfeedfacecafe, {0, 0, 2})));
  // The sender's history (a compressed body) and a resend's notice.
  ddft::common::HistoryRecord h;
  h.file = {0x0123456789abcdef, 4,
            "dir/missed.bin",   5000,
            VerifyType::kB2B,   "00112233445566778899aabbccddeeff"};
  h.sent_ns = 1'795'867'200'000'000'000;
  h.lane = 1;
  ddft::common::HistoryRecord h2 = h;
  h2.file.file_id = 5;
  h2.file.path = "dir/missed-too.bin";
  w.put("packet", "history", with_ctl(1, s.history(0xfeedfacecafe, {h, h2})));
  w.put("packet", "resend", with_ctl(1, s.resend(9, h.file)));
}

void announce_seeds(Writer& w) {
  w.prepare("announce");
  Session s(0x2222);
  for (const NamedPath& p : paths()) {
    // The encoder refuses a path over 4096 bytes: that payload is put together by hand.
    Bytes payload = payload_of(s.announce(1, "x", 1000));
    payload.resize(kAnnounceFixedSize);
    poke_announce_path_len(payload.data(), static_cast<uint16_t>(p.path.size()));
    payload.insert(payload.end(), p.path.begin(), p.path.end());
    w.put("announce", p.name, payload);
  }
  w.put("announce", "sha256-big",
        payload_of(s.announce(9, "big.iso", uint64_t{1} << 40, VerifyType::kSha256)));
}

void path_seeds(Writer& w) {
  w.prepare("path");
  constexpr uint8_t kFinalize = 1;
  constexpr uint8_t kOverwrite = 2;
  constexpr uint8_t kReject = 4;
  constexpr uint8_t kTwice = 8;
  for (const NamedPath& p : paths()) w.put("path", p.name, text(kFinalize, p.path));
  w.put("path", "fail-nested", text(0, "dir/new/file.bin"));
  w.put("path", "symlink-file-overwrite", text(kFinalize | kOverwrite, "flink"));
  w.put("path", "existing-file-reject", text(kFinalize | kReject, "exists"));
  w.put("path", "existing-file-overwrite", text(kFinalize | kOverwrite, "exists"));
  w.put("path", "existing-folder-overwrite", text(kFinalize | kOverwrite, "dir"));
  w.put("path", "twice-rename", text(kFinalize | kTwice, "dir/twice.txt"));
  w.put("path", "twice-fail", text(kTwice, "twice.txt"));
  constexpr uint8_t kTight = 16;  // --max-path-length 100 --max-path-depth 4
  w.put("path", "tight-ok", text(kFinalize | kTight, "a/b/c/d.txt"));
  w.put("path", "tight-too-deep", text(kFinalize | kTight, "a/b/c/d/e.txt"));
  w.put("path", "tight-too-long", text(kFinalize | kTight, std::string(101, 'n')));
}

void receiver_seeds(Writer& w) {
  w.prepare("receiver");
  constexpr uint8_t kRename = 0, kOverwrite = 1, kReject = 2;
  constexpr uint8_t kRwd = 1 << 2, kRws = 2 << 2;
  constexpr uint8_t kKeyed = 16;  // the receiver has the harness's key
  {                               // two whole files and the final heartbeat
    Session s(0x3001);
    Script sc(kRename);
    sc.add(s.heartbeat(false));
    sc.add(s.file(1, "dir/a.bin", pattern(1700, 3)));
    sc.add(s.file(2, "b.txt", pattern(10, 4), VerifyType::kSha256), kFix | kPoll);
    sc.add(s.file(3, "empty", "", VerifyType::kNone));
    sc.add(s.heartbeat(true), kFix | kPoll);
    w.put("receiver", "session-two-files", sc.bytes());
  }
  {  // FEC 4:2 x2, with packets lost that parity rebuilds
    Session s(0x3002);
    uint64_t seq = 0;
    auto wire =
        with_fec(s.file(1, "fec/rebuilt.bin", pattern(1200, 5)), {4, 2, 2}, s.session(), &seq);
    Script sc(kRwd);
    for (size_t i = 0; i < wire.size(); ++i) {
      if (i != 2 && i != 3) sc.add(wire[i]);
    }
    sc.wait(4);
    w.put("receiver", "session-fec-rebuild", sc.bytes());
  }
  {  // FEC 4:2 x2: the announce lost, its window's data and end packet came before parity
    Session s(0x300B);
    uint64_t seq = 0;
    auto wire = with_fec(s.file(1, "fec/announce-lost.bin", pattern(1200, 14)), {4, 2, 2},
                         s.session(), &seq);
    Script sc(kRename);
    for (size_t i = 1; i < wire.size(); ++i) sc.add(wire[i]);
    sc.wait(4);
    w.put("receiver", "session-fec-announce-lost", sc.bytes());
  }
  {  // FEC 2:1, too much lost in one group: the file fails with its missing range
    Session s(0x3003);
    uint64_t seq = 0;
    auto wire = with_fec(s.file(1, "fec/lost.bin", pattern(1000, 6)), {2, 1, 1}, s.session(), &seq);
    Script sc(kRename);
    for (size_t i = 0; i < wire.size(); ++i) {
      if (i != 1 && i != 2) sc.add(wire[i]);
    }
    sc.wait(4).wait(7);
    w.put("receiver", "session-fec-beyond-repair", sc.bytes());
  }
  {  // hostile names next to planted symlinks, under each collision policy
    const std::string c = pattern(100, 7);
    const char* names[] = {"link/escaped.txt", "flink",      "dir/link/x", "exists", "../x", "dir",
                           ".failed/x",        "/etc/passwd"};
    const uint8_t policies[] = {kRename, kOverwrite, kReject};
    for (const uint8_t policy : policies) {
      Session s(0x3100 + policy);
      Script sc(policy);
      uint32_t id = 1;
      for (const char* n : names) sc.add(s.file(id++, n, c), kFix | kPoll);
      sc.add(s.heartbeat(true));
      w.put("receiver", "hostile-names-policy" + std::to_string(policy), sc.bytes());
    }
  }
  {  // data out of order and duplicated, end before the last data packet
    Session s(0x3004, 416);
    const std::string c = pattern(2500, 8);
    auto ann = s.announce(1, "shuffled.bin", c.size());
    auto data = s.data(1, c);
    auto end = s.end(1, c);
    Script sc(kRws);
    sc.add(ann).add(data[3]).add(data[0]).add(data[5]).add(data[0]).add(data[2]).add(data[1]);
    sc.add(end).add(data[4], kFix | advance(2) | kPoll).add(data[6]).add(end);
    w.put("receiver", "reordered-duplicates", sc.bytes());
  }
  {  // a file whose data stops: the 5 s file timeout, then a new file; an abort
    Session s(0x3005);
    const std::string c = pattern(1500, 9);
    auto data = s.data(1, c);
    Script sc(kRename);
    sc.add(s.announce(1, "stalled.bin", c.size())).add(data[0]);
    sc.wait(6);
    sc.add(s.announce(2, "aborted.bin", c.size())).add(s.data(2, c)[0]);
    sc.add(s.abort(2, "interrupted"), kFix | kPoll);
    sc.add(s.announce(3, "superseded.bin", c.size())).add(s.announce(4, "next.bin", 0));
    sc.wait(4);
    w.put("receiver", "timeout-abort-superseded", sc.bytes());
  }
  {  // the sender restarts (new session), and packets of the old one come late
    Session a(0x3006), b(0x3007);
    const std::string c = pattern(900, 10);
    Script sc(kRename);
    sc.add(a.announce(1, "restart.bin", c.size())).add(a.data(1, c)[0]);
    sc.add(b.file(1, "restart.bin", c));
    sc.add(a.data(1, c)[1]).add(a.end(1, c)).add(b.heartbeat(true), kFix | kPoll);
    w.put("receiver", "sender-restart", sc.bytes());
  }
  {  // --repeat 2: holes of copy 0 filled by copy 1; one datagram lost in a full ring
    Session s(0x3008);
    const std::string c = pattern(1600, 11);
    auto first = s.data(1, c, 0);
    Script sc(kRename);
    sc.add(s.announce(1, "twice.bin", c.size()));
    sc.add(first[0]).add(first[1], kRingDrop).add(first[3]);
    sc.add(s.end(1, c, VerifyType::kB2B, 0, 2));
    sc.add(s.data(1, c, 1)).add(s.end(1, c, VerifyType::kB2B, 1, 2), kFix | kPoll);
    w.put("receiver", "repeat-and-ring-drop", sc.bytes());
  }
  {  // damage: a bad checksum left as it is, an end that disagrees with the announce, a bad key
    Session s(0x3009);
    const std::string c = pattern(800, 12);
    Bytes broken = s.data(1, c)[0];
    // Its offset changed, the checksum left stale: the checksum fails.
    ddft::common::poke_data_offset(broken.data(),
                                   ddft::common::peek_data_offset(broken.data()) ^ 0xFF);
    Script sc(kRename);
    sc.add(s.announce(1, "mismatch.bin", c.size())).add(broken, 0);
    sc.add(s.data(1, c)).add(s.end(1, c + "x"));
    sc.add(s.file(2, "sha256.bin", c, VerifyType::kSha256));
    Bytes wrong_key = s.end(3, c, VerifyType::kSha256);
    ddft::common::payload_of(wrong_key.data())[kEndFixedSize] ^= 1;  // the key's first byte
    sc.add(s.announce(3, "wrongkey.bin", c.size(), VerifyType::kSha256)).add(s.data(3, c));
    sc.add(wrong_key);
    sc.add(s.heartbeat(true)).wait(5);
    w.put("receiver", "damage", sc.bytes());
  }
  {  // --key-file: sealed and encrypted, one datagram lost that FEC rebuilds, then a forged and
     // a replayed datagram, and an unsealed one
    Session s(0x300C);
    uint64_t seq = 0;
    const std::string c = pattern(1100, 15);
    std::vector<Bytes> inner = s.file(1, "sealed/enc.bin", c);
    auto wire = sealed(with_fec(inner, {4, 1, 1}, s.session(), &seq), s.session(), true);
    Script sc(kKeyed);
    for (size_t i = 0; i < wire.size(); ++i) {
      if (i != 2) sc.add(wire[i]);
    }
    Bytes forged = wire[1];
    ddft::common::payload_of(forged.data())[20] ^= 1;
    sc.add(forged).add(wire[1]).add(inner[1], kFix | kPoll);
    w.put("receiver", "sealed-encrypted-fec", sc.bytes());
  }
  {  // --key-file: authenticated only (no encryption), two files
    Session s(0x300D);
    std::vector<Bytes> inner = s.file(1, "auth/a.txt", pattern(700, 16));
    for (Bytes& d : s.file(2, "auth/b.txt", pattern(30, 17), VerifyType::kSha256)) {
      inner.push_back(std::move(d));
    }
    inner.push_back(s.heartbeat(true));
    Script sc(kKeyed | kRwd);
    sc.add(sealed(inner, s.session(), false), kFix | kPoll);
    w.put("receiver", "sealed-auth-only", sc.bytes());
  }
  {  // a file with a repeated announce mid-file, an aborted one, then the periodic list, the
     // complete list and the final heartbeat
    Session s(0x300E);
    const std::string c = pattern(1800, 18);
    const std::string t = pattern(700, 19);
    Script sc(kRename);
    sc.add(s.announce(1, "listed/a.bin", c.size())).add(s.data(1, c, 0, 0, 1000));
    sc.add(s.repeat_announce(1, "listed/a.bin", c.size()));
    sc.add(s.data(1, c, 0, 1000)).add(s.end(1, c), kFix | kPoll);
    sc.add(s.announce(2, "listed/torn.bin", t.size())).add(s.data(2, t)[0]);
    sc.add(s.abort(2, "read error: Input/output error"));
    sc.add(s.file_list({{1, "listed/a.bin", c}, {2, "listed/torn.bin", t, VerifyType::kB2B, true}},
                       0));
    sc.add(s.file(3, "listed/b.txt", t, VerifyType::kSha256), kFix | kPoll);
    sc.add(s.file_list({{1, "listed/a.bin", c},
                        {2, "listed/torn.bin", t, VerifyType::kB2B, true},
                        {3, "listed/b.txt", t, VerifyType::kSha256}},
                       kListComplete));
    sc.add(s.heartbeat(true), kFix | kPoll);
    w.put("receiver", "repeat-announce-and-lists", sc.bytes());
  }
  {  // the receiver joins mid-file: the first thing it hears of the file is a repeated announce
     // (its first announce and data before went to nobody); the list names a file it never saw
    Session s(0x300F);
    const std::string c = pattern(2600, 20);
    s.announce(1, "joined/late.bin", c.size());  // before the receiver started
    s.data(1, c, 0, 0, 1500);
    Script sc(kRename);
    sc.add(s.repeat_announce(1, "joined/late.bin", c.size()));
    sc.add(s.data(1, c, 0, 1500)).add(s.end(1, c), kFix | kPoll);
    sc.add(
        s.file_list({{7, "joined/earlier.bin", c.substr(0, 300)}, {1, "joined/late.bin", c}}, 0));
    sc.wait(6);
    sc.add(s.heartbeat(true), kFix | kPoll);
    w.put("receiver", "joined-mid-file", sc.bytes());
  }
  {  // a pause announced (pause_s), silence, heartbeats with a short interval
    Session s(0x300A);
    const std::string c = pattern(600, 13);
    Script sc(kRename);
    sc.add(s.heartbeat(false, 100)).add(s.announce(1, "paused.bin", c.size(), VerifyType::kB2B, 9));
    sc.wait(6).wait(3);
    sc.add(s.data(1, c)).add(s.end(1, c)).wait(7);
    w.put("receiver", "pause-and-silence", sc.bytes());
  }
}

// --compress: blocks as kZData pieces, out of order, duplicated, filled from a second copy; and
// frames that must fail their file (a bomb, junk).
void compressed_seeds(Writer& w) {
  {
    Session s(0x300C);
    const std::string c = log_text(5000, 14);
    auto first = s.zdata(1, c, 2000, 0);
    auto second = s.zdata(1, c, 2000, 1);
    Script sc(1 << 2);  // rwd
    sc.add(s.announce(1, "logs/app.log", c.size()));
    for (size_t i = first.size(); i-- > 0;) {
      if (i != 1) sc.add(first[i]);  // backwards, the second piece lost
    }
    sc.add(first[0]).add(s.end(1, c, VerifyType::kB2B, 0, 2), kFix | kPoll);
    sc.add(second).add(s.end(1, c, VerifyType::kB2B, 1, 2), kFix | kPoll);
    sc.add(s.heartbeat(true), kFix | kPoll);
    w.put("receiver", "compressed-blocks", sc.bytes());
  }
  {
    Session s(0x300D);
    const std::string c = log_text(3000, 15);
    Script sc(0);
    sc.add(s.announce(1, "bomb.bin", c.size()));
    // A frame of 64 KiB of zeros standing for a 2000-byte block.
    const std::string zeros(65536, '\0');
    std::string frame(ZSTD_compressBound(zeros.size()), '\0');
    frame.resize(ZSTD_compress(frame.data(), frame.size(), zeros.data(), zeros.size(), 3));
    sc.add(s.zframe(1, 0, 2000, frame), kFix | kPoll);
    sc.add(s.announce(2, "junk.bin", c.size()));
    sc.add(s.zframe(2, 0, 2000, std::string(900, 'j')), kFix | kPoll);
    sc.add(s.heartbeat(true), kFix | kPoll);
    w.put("receiver", "compressed-bomb-and-junk", sc.bytes());
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_seeds DIR   (writes DIR/{packet,announce,path,receiver})\n");
    return 2;
  }
  try {
    Writer w(argv[1]);
    packet_seeds(w);
    announce_seeds(w);
    path_seeds(w);
    receiver_seeds(w);
    compressed_seeds(w);
    std::printf("make_seeds: %zu seed files written below %s\n", w.count(), argv[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_seeds: %s\n", e.what());
    return 1;
  }
  return 0;
}
