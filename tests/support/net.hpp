// Test helper for sockets: a loopback UDP port for a test's programs to listen on.
#pragma once

#include <cstdint>

namespace ddft::testing {

// A UDP port on 127.0.0.1 that was free a moment ago.
uint16_t free_udp_port();

}  // namespace ddft::testing
