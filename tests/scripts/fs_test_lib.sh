# Shared by the tests that put the receiver's output on a real file system of their own
# (powercut_test.sh, fs_faults_test.sh): the skip rule, a work folder on /dev/shm, and the
# bookkeeping that undoes every mount, loop device and process on any exit. Source it, then call
# fs_test_init NAME. Not a program: it defines functions and variables only.

# Prints the reason on both streams and exits 77 (ctest SKIP_RETURN_CODE).
skip() {
  echo "SKIPPED: $*"
  echo "SKIPPED: $*" >&2
  exit 77
}

pass=0 failures=0
ok() { pass=$((pass + 1)); }
bad() {
  failures=$((failures + 1))
  echo "FAIL $*"
}

loops=()        # loop devices attached here
mounts=()       # mount points mounted here
fuse_mounts=()  # FUSE mount points (fusermount3 -u)
pids=()         # processes started here and still running

fs_test_cleanup() {
  local p m l i
  for p in "${pids[@]}"; do
    kill -CONT "$p" 2> /dev/null  # a stopped process would not see the KILL until continued
    kill -KILL "$p" 2> /dev/null
  done
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
    m=${mounts[i]}
    mountpoint -q "$m" && { umount "$m" 2> /dev/null || umount -l "$m"; }
  done
  for l in "${loops[@]}"; do losetup -d "$l" 2> /dev/null; done
  for m in "${fuse_mounts[@]}"; do unmount_fuse "$m"; done
  # DDFT_KEEP_WORK=1 keeps logs and images for a post-mortem.
  if [[ -n "${DDFT_KEEP_WORK:-}" ]]; then
    echo "kept $work"
  else
    rm -rf "$work"
  fi
}

# Drops VALUE from the array named ARRAY (it was cleaned up already).
forget() {  # ARRAY VALUE
  local -n arr=$1
  local out=() x
  for x in "${arr[@]}"; do [[ "$x" != "$2" ]] && out+=("$x"); done
  arr=("${out[@]}")
}

# Attaches FILE to a free loop device; sets dev (or the error text, returning 1).
attach() {  # FILE
  dev=$(losetup -f --show "$1" 2>&1) || return 1
  loops+=("$dev")
}
# Attaches IMG and mounts it (ext4) on DIR with OPTIONS; sets dev. Returns 1 when losetup fails,
# 2 when mount does.
mount_image() {  # IMG DIR [OPTIONS]
  attach "$1" || return 1
  mkdir -p "$2"
  mount -t ext4 -o "${3:-defaults}" "$dev" "$2" || return 2
  mounts+=("$2")
}
unmount_image() {  # DIR DEV
  umount "$1" && forget mounts "$1"
  losetup -d "$2" && forget loops "$2"
}

# Unmounts a FUSE mount point. A loop device just detached lets go of its backing file a moment
# later (the detach completes when its last opener closes), so "busy" is retried for 5 s, then
# the mount is detached lazily.
unmount_fuse() {  # DIR
  local i
  for i in {1..50}; do
    mountpoint -q "$1" || break
    fusermount3 -u "$1" 2> /dev/null && break
    sleep 0.1
  done
  mountpoint -q "$1" && umount -l "$1"
  forget fuse_mounts "$1"
}

# Waits up to SECONDS for the child PID to end and returns its exit status; one still running
# then is killed (124). Never a bare wait: a process stuck on a failing disk would hang the test.
wait_child() {  # PID SECONDS
  local end=$((SECONDS + $2)) stat
  while read -r stat 2> /dev/null < "/proc/$1/stat"; do
    stat=${stat##*) }
    [[ ${stat:0:1} == Z ]] && break
    if ((SECONDS >= end)); then
      kill -KILL "$1" 2> /dev/null
      wait "$1" 2> /dev/null
      forget pids "$1"
      return 124
    fi
    sleep 0.05
  done
  wait "$1"
  local rc=$?
  forget pids "$1"
  return $rc
}

port() { echo $((20000 + RANDOM % 30000)); }
# Time from T0 to T1 (default now), both $EPOCHREALTIME, times SCALE (1: s, 1000: ms), rounded.
since() {  # T0 SCALE [T1]
  awk -v a="$1" -v b="${3:-$EPOCHREALTIME}" -v s="$2" 'BEGIN { printf "%.*f", s == 1, (b - a) * s }'
}
wait_for_file() {  # FILE SECONDS: until FILE exists and is not empty
  local end=$((SECONDS + $2))
  until [[ -s "$1" ]]; do
    ((SECONDS >= end)) && return 1
    sleep 0.02
  done
}

# Skips unless root with the tools; makes $work on /dev/shm, sets the traps, and checks once that
# an ext4 image loop-mounts here (else skips).
fs_test_init() {  # NAME
  [[ $(id -u) -eq 0 ]] || skip "$1 test needs root (loop devices, mounts)"
  local tool
  for tool in losetup mkfs.ext4 mount umount mountpoint cp cmp awk; do
    command -v "$tool" > /dev/null || skip "$1 test needs $tool"
  done
  work=$(mktemp -d "/dev/shm/ddft-$1.XXXXXX") || skip "cannot make a folder on /dev/shm"
  trap fs_test_cleanup EXIT
  trap 'exit 130' INT TERM
  truncate -s 16M "$work/probe.img"
  mkfs.ext4 -q -F "$work/probe.img" || skip "mkfs.ext4 fails on /dev/shm"
  mount_image "$work/probe.img" "$work/probe"
  case $? in
    1) skip "no loop device: $dev" ;;
    2) skip "cannot mount an ext4 image on $dev" ;;
  esac
  unmount_image "$work/probe" "$dev"
  rm -f "$work/probe.img"
}
