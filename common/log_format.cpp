#include "common/log_format.hpp"

#include <fmt/format.h>

namespace ddft::common {

std::string with_commas(uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  out.reserve(digits.size() + digits.size() / 3);
  const size_t lead = digits.size() % 3;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i != 0 && i >= lead && (i - lead) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string format_hms(std::chrono::nanoseconds d) {
  using namespace std::chrono;
  const auto s = duration_cast<seconds>(d + milliseconds(500)).count();
  return fmt::format("{:02}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60);
}

std::string format_hms_ms(std::chrono::nanoseconds d) {
  using namespace std::chrono;
  const auto ms = duration_cast<milliseconds>(d).count();
  const auto s = ms / 1000;
  return fmt::format("{:02}:{:02}:{:02}.{:03}", s / 3600, (s / 60) % 60, s % 60, ms % 1000);
}

double mib_per_s(uint64_t bytes, std::chrono::nanoseconds d) {
  if (d.count() <= 0) return 0.0;
  return static_cast<double>(bytes) / (1024.0 * 1024.0) / std::chrono::duration<double>(d).count();
}

}  // namespace ddft::common
