// dd_iotest: the disk IO self-test (seed 000's -testIO / -testReadIO), run before a transfer to
// learn what the disks sustain and with which block size and thread count.
#include "iotest/cli.hpp"

int main(int argc, char** argv) {
  return ddft::iotest::iotest_main(argc, argv, "dd_iotest", std::nullopt);
}
