#include "support/files.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

namespace ddft::testing {

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const std::filesystem::path& p, std::string_view text) {
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) throw std::runtime_error("cannot write " + p.string());
}

bool same_content(const std::filesystem::path& a, const std::filesystem::path& b) {
  std::ifstream fa(a, std::ios::binary);
  std::ifstream fb(b, std::ios::binary);
  if (!fa || !fb) return false;
  std::vector<char> ba(1 << 20);
  std::vector<char> bb(1 << 20);
  while (true) {
    fa.read(ba.data(), static_cast<std::streamsize>(ba.size()));
    fb.read(bb.data(), static_cast<std::streamsize>(bb.size()));
    if (fa.gcount() != fb.gcount()) return false;
    if (std::memcmp(ba.data(), bb.data(), static_cast<size_t>(fa.gcount())) != 0) return false;
    if (fa.gcount() == 0 || !fa) return !fb || fb.peek() == EOF;
  }
}

void write_pattern(const std::filesystem::path& p, uint64_t size, uint64_t seed) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary);
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> block(1 << 17);  // 1 MiB
  for (uint64_t left = size; left > 0;) {
    for (auto& w : block) w = rng();
    const uint64_t n = std::min<uint64_t>(left, block.size() * 8);
    out.write(reinterpret_cast<const char*>(block.data()), static_cast<std::streamsize>(n));
    left -= n;
  }
}

std::filesystem::path state_folder(const std::filesystem::path& out) { return out / ".ddft"; }

std::filesystem::path failed_folder(const std::filesystem::path& out) {
  return state_folder(out) / "failed";
}

std::vector<std::filesystem::path> failed_records(const std::filesystem::path& out) {
  std::vector<std::filesystem::path> recs;
  if (!std::filesystem::exists(failed_folder(out))) return recs;
  for (const auto& e : std::filesystem::directory_iterator(failed_folder(out))) {
    if (e.path().extension() == ".json") recs.push_back(e.path());
  }
  return recs;
}

std::vector<std::string> failed_record_texts(const std::filesystem::path& out) {
  std::vector<std::string> texts;
  for (const auto& p : failed_records(out)) texts.push_back(read_file(p));
  return texts;
}

}  // namespace ddft::testing
