// Threads started through start_named_thread() carry their name (as top -H shows it), cut to
// the kernel's 15 characters, and get the jthread's stop token when they take one.
#include "common/named_thread.hpp"

#include <gtest/gtest.h>
#include <pthread.h>

#include <string>

namespace ddft::common {
namespace {

std::string own_name() {
  char name[32] = "";
  pthread_getname_np(pthread_self(), name, sizeof name);
  return name;
}

TEST(NamedThread, TheThreadCarriesItsName) {
  std::string seen;
  start_named_thread("dd-test", [&] { seen = own_name(); }).join();
  EXPECT_EQ(seen, "dd-test");
}

TEST(NamedThread, ALongNameIsCutToTheKernelsLimit) {
  std::string seen;
  start_named_thread("dd-a-name-longer-than-fifteen", [&] { seen = own_name(); }).join();
  EXPECT_EQ(seen, std::string("dd-a-name-longer-than-fifteen").substr(0, kMaxThreadName));
}

TEST(NamedThread, ABodyThatTakesAStopTokenIsStoppedOnRequest) {
  bool stopped = false;
  {
    auto t = start_named_thread("dd-stop", [&](std::stop_token stop) {
      while (!stop.stop_requested()) std::this_thread::yield();
      stopped = true;
    });
    t.request_stop();
  }
  EXPECT_TRUE(stopped);
}

}  // namespace
}  // namespace ddft::common
