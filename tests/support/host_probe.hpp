// What the host offers, asked of the kernel directly, never through the product: a test skips
// only when one of these says the host lacks what it needs, so that a product that fails where
// the host has the feature fails its test instead of skipping it.
//
// Each probe returns why the host lacks the feature (one line, for GTEST_SKIP), or "" when it has
// it. Any thread; each probe may be called any number of times.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

#include "common/block_io.hpp"

namespace ddft::testing {

// io_uring as the block I/O engine needs it: a ring (io_uring_queue_init), the opcodes it submits
// (IORING_OP_READ, IORING_OP_WRITE, IORING_OP_FSYNC, per io_uring_get_probe), an eventfd
// registered for completions, and a NOP submitted and completed. Asked once per process.
const std::string& io_uring_missing();

// What a test of `engine` needs of the host: io_uring_missing() for kUring, "" for the others
// (pread/pwrite and the null sink need nothing; kAuto runs on any host).
std::string engine_missing(common::IoEngine engine);

// File leases on the file system of `dir` (which must exist and be writable), as the hot folder
// uses them to see a writer: a read lease (F_SETLEASE, F_RDLCK) granted on a scratch file nobody
// has open for writing, and refused with EAGAIN while a writer has it open. The scratch file is
// removed before this returns.
std::string file_leases_missing(const std::filesystem::path& dir);

// O_DIRECT on the file system of `dir`: a scratch file created there with O_DIRECT (removed
// before this returns).
std::string direct_io_missing(const std::filesystem::path& dir);

// The IPv6 loopback: a TCP socket bound to [::1]:0 and listening.
std::string ipv6_loopback_missing();

// A UDP socket receive buffer of `bytes`: asked for with SO_RCVBUFFORCE (root), else SO_RCVBUF
// (up to net.core.rmem_max), and what SO_RCVBUF then reads (Linux reports twice what it set)
// at least `bytes`.
std::string udp_receive_buffer_missing(size_t bytes);

}  // namespace ddft::testing
