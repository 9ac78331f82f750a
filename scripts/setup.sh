#!/usr/bin/env bash
# Installs every Debian package the build, the tests and the demo need.
# Idempotent: packages already present are not touched, apt-get runs only when something is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libboost-dev libspdlog-dev libfmt-dev libcli11-dev libxxhash-dev libssl-dev
  libgtest-dev libgmock-dev liburing-dev libisal-dev libbenchmark-dev
  # --compress: zstd blocks on the sender, bounded decompression on the receiver
  libzstd-dev
  # the receiver tells systemd it is ready and alive (sd_notify: Type=notify, watchdog)
  libsystemd-dev
  # the benchmark (scripts/bench.sh, smoke-run by the tests): reference tools and its report
  fio iperf3 python3 time
  # the disk self-test's dialogue test runs it on a pseudo-terminal with script(1)
  bsdutils
  # scripts/check_sizes.sh --cross-check: its line counts checked against clang-tidy-14's
  # readability-function-size (the size check itself, run by ctest, does not need it)
  clang-tidy
  # the systemd unit's test: systemd-analyze verify/security (fresh Debian 12 containers lack
  # the systemd package), strace for the system calls of a transfer against its filter
  systemd strace
  # the Debian package (scripts/package_check.sh): its man pages are made with help2man; its
  # check reads them with man, runs its logrotate file and dpkg-deb, cpack and dpkg-shlibdeps
  # (dpkg-dev, with build-essential)
  help2man man-db logrotate
  # ... and lintian, Debian's package checker, which it runs on the package: no error and no
  # warning may stand; its dpkg -i needs what the package depends on beyond the libraries
  # (adduser, which minimal images leave out)
  lintian adduser
  # the monitoring files' test (ctest scripts.monitoring): promtool checks and unit-tests the
  # alert rules (and logrotate -d the logrotate file)
  prometheus
  # the file-system fault test (scripts.fs_faults): I/O errors on demand from nbdkit's error
  # filter over a RAM disk, shown as a file by nbdfuse (FUSE) and loop-mounted; the power-cut
  # test (scripts.powercut): disks with a volatile write cache from nbdkit's cache filter
  nbdkit libnbd-bin fuse3
  # the fuzz harnesses (scripts/fuzz.sh): libFuzzer comes with clang 14, whose fuzzer, ASan and
  # UBSan runtimes are the separate libclang-rt-14-dev
  clang libclang-rt-14-dev
  # the formatting check (scripts/check_format.sh, ctest scripts.format)
  clang-format
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all build dependencies present"
fi
