// The block I/O engines a parameterised test runs on: each test suite lists the ones it needs
// (INSTANTIATE_TEST_SUITE_P(Engines, Suite, Values(EngineParam{...}, ...), engine_name)).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "common/block_io.hpp"

namespace ddft::testing {

struct EngineParam {
  common::IoEngine engine;
  unsigned threads;  // I/O threads: 1 is the calling thread's own ring or pwrite
  const char* name;  // the test name's suffix
};

inline std::string engine_name(const ::testing::TestParamInfo<EngineParam>& info) {
  return info.param.name;
}

}  // namespace ddft::testing
