// The DFTS log's numbers and times, as its lines print them: byte counts with thousands
// separators, durations, rates in MB/s (MB = 2^20 bytes). Pure functions: any thread, no throw.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace ddft::common {

// 104857600 -> "104,857,600".
std::string with_commas(uint64_t n);
// Whole seconds as "HH:MM:SS" (rounded to the nearest second).
std::string format_hms(std::chrono::nanoseconds d);
// "HH:MM:SS.mmm".
std::string format_hms_ms(std::chrono::nanoseconds d);
// Bytes per second in MB/s (MB = 2^20 bytes, as DFTS prints it), 0 for a zero duration.
double mib_per_s(uint64_t bytes, std::chrono::nanoseconds d);

}  // namespace ddft::common
