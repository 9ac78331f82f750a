#!/usr/bin/env bash
# The hardened systemd unit of dd_file_receive:
#   1. the directives the hardening depends on are there, with their values, and ReadWritePaths=
#      names exactly the folders the example config writes to (output, failed files, log); the
#      readiness and watchdog settings (Type=notify, NotifyAccess=main, WatchdogSec=,
#      TimeoutStartSec=, Restart=on-failure);
#   2. systemd-analyze verify accepts it, with ExecStart pointed at this build's binary;
#   3. systemd-analyze security --offline rates its exposure below kMaxExposure;
#   4. (with strace) every system call a real transfer makes passes the unit's SystemCallFilter=,
#      no socket family outside RestrictAddressFamilies= and no writable and executable memory
#      (MemoryDenyWriteExecute=), with the daemon notifying a service manager (NOTIFY_SOCKET,
#      a watchdog) as under the unit: READY=1, WATCHDOG=1 and STOPPING=1 arrive (with python3);
#   5. (as root) the unit's credentials, emulated with setpriv: no capabilities at all, yet the
#      receiver runs at the unit's nice and realtime IO class, and receives a file;
#   6. (as root, with systemd as PID 1) the unit started for real, receiving a file; and the
#      receiver as a transient service (systemd-run) with a 2 s watchdog, killed by systemd
#      when its writer stalls;
#   6b. (as root, where PID 1 is not systemd but a private mount namespace is allowed) the unit
#      under a real systemd user manager: `systemctl start` returns once READY=1 came (the start
#      line logged, the port bound), the watchdog keeps it running while idle and kills it when
#      the writer stalls, and a stop ends it cleanly, then the transient service of section 6
#      under the same user manager (systemd-run --user). The unit runs as root without the
#      directives that need a mount namespace (they fail with 226/NAMESPACE in such a
#      container), but with its system-call filter, address families and capabilities;
#   7. with SEND_UNIT and SEND_CONF, the hot-folder sender's unit: its directives, one writable
#      mount for its hot folder and sent folder, systemd-analyze verify and security, the system
#      calls of a traced send against its filter (and no bind, no /proc beyond processes), and
#      its credentials emulated with setpriv.
# A part that cannot run here says why. Exit 77 (skipped) when systemd-analyze is missing.
# Usage: systemd_test.sh UNIT CONF DD_FILE_SEND DD_FILE_RECEIVE [SEND_UNIT SEND_CONF]
set -uo pipefail
self=$(realpath "${BASH_SOURCE[0]}")

# transient_watchdog SCOPE RECV_BIN SEND_BIN DIR FILE: the receiver as a transient service
# (systemd-run, SCOPE --user or --system) with a 2 s watchdog and the writer-stall hook (6 s after
# 1 MiB): started once READY=1 came, kept by its pings while idle, then killed by the service
# manager for the watchdog once FILE, sent to it, stalls its writer. Prints a PASS or FAIL line
# per check, "transient watchdog: " before each.
transient_watchdog() {
  local scope=$1 recv=$2 send=$3 dir=$4 file=$5
  local unit="ddft-watchdog-$$-$RANDOM" port=$((20000 + RANDOM % 30000)) env=()
  local sc=(timeout 60 systemctl "$scope") verdict
  tw() {
    if [[ "$2" == "$3" ]]; then verdict=PASS; else verdict="FAIL"; fi
    echo "$verdict transient watchdog: $1: expected '$2', got '$3'"
  }
  # LeakSanitizer cannot stop the world in a process the manager kills: leaks are not checked
  # there (the rest of ASan stays), as for the unit under the user manager.
  [[ -n "${ASAN_OPTIONS:-}" ]] && env=(-E "ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=0")
  mkdir -p "$dir/out"
  if ! timeout 60 systemd-run "$scope" --unit="$unit" -p Type=notify -p NotifyAccess=main \
    -p WatchdogSec=2s -p LimitCORE=0 -p Restart=no "${env[@]}" "$recv" --listen "127.0.0.1:$port" \
    --output "$dir/out" --buffer-mb 512 --log-file "$dir/rx.log" --quiet \
    --test-stall-writer-s 6 --test-stall-after-mb 1 > "$dir/run.log" 2>&1; then
    echo "FAIL transient watchdog: systemd-run: $(tail -3 "$dir/run.log")"
    return
  fi
  prop() { "${sc[@]}" show -p "$1" --value "$unit"; }
  tw "state once started" active/running "$(prop ActiveState)/$(prop SubState)"
  sleep 3
  tw "state after 3 s idle" active/running "$(prop ActiveState)/$(prop SubState)"
  "$send" "$file" --dest "127.0.0.1:$port" > "$dir/send.log" 2>&1
  for _ in $(seq 80); do [[ "$(prop Result)" == watchdog ]] && break; sleep 0.1; done
  tw "result with the writer stalled" watchdog "$(prop Result)"
  "${sc[@]}" stop "$unit" > /dev/null 2>&1
  "${sc[@]}" reset-failed "$unit" > /dev/null 2>&1
}

# --- 6b, inside a private mount namespace:
#     --user-manager UNIT WORK SEND_BIN PORT LOG FILE RECV_BIN.
#     Prints PASS, FAIL and SKIP lines; exit 77 when no user manager can run here.
if [[ "${1:-}" == --user-manager ]]; then
  unit=$2 work=$3 send_bin=$4 port=$5 log=$6 file=$7 recv_bin_for_um=$8
  say() { echo "$1 user manager: $2"; }
  check() {
    if [[ "$2" == "$3" ]]; then say PASS "$1"; else say FAIL "$1: expected '$2', got '$3'"; fi
  }
  # systemd --user runs only where the system "was booted with systemd" (/run/systemd/system
  # exists): say so in this namespace only.
  [[ -d /run/systemd ]] && mount -t tmpfs tmpfs /run/systemd && mkdir /run/systemd/system || exit 77
  export XDG_RUNTIME_DIR=$work/xdg
  mkdir -p -m 0700 "$XDG_RUNTIME_DIR/systemd/user"
  cp "$unit" "$XDG_RUNTIME_DIR/systemd/user/ddft-live.service"
  # Under the sanitizer suite, LeakSanitizer's stop-the-world needs calls the unit's system-call
  # filter refuses, so it would fail the exit (as for the traced programs below): only leak
  # detection is off, the rest of AddressSanitizer stays.
  if [[ -n "${ASAN_OPTIONS:-}" ]]; then
    mkdir -p "$XDG_RUNTIME_DIR/systemd/user/ddft-live.service.d"
    printf '[Service]\nEnvironment=ASAN_OPTIONS=%s\n' "$ASAN_OPTIONS:detect_leaks=0" \
      > "$XDG_RUNTIME_DIR/systemd/user/ddft-live.service.d/asan.conf"
  fi
  /lib/systemd/systemd --user > "$work/manager.log" 2>&1 &
  manager=$!
  trap 'kill "$manager"; wait "$manager"' EXIT
  for _ in $(seq 50); do [[ -S "$XDG_RUNTIME_DIR/systemd/private" ]] && break; sleep 0.1; done
  [[ -S "$XDG_RUNTIME_DIR/systemd/private" ]] || exit 77
  sc() { timeout 60 systemctl --user "$@"; }
  prop() { sc show -p "$1" --value ddft-live.service; }
  # Type=notify: start returns at READY=1, by then the start line is logged and the port bound.
  start=$EPOCHREALTIME
  if sc start ddft-live.service; then say PASS "start"; else
    say FAIL "start: $(sc status ddft-live.service --no-pager 2>&1 | head -n 12)"
    exit 0
  fi
  took=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
  echo "user manager: start returned after $took s (READY=1, once the buffer was prepared)"
  check "start line logged when start returned" yes \
    "$(grep -q 'receiving on' "$log" && echo yes || echo no)"
  check "port bound when start returned" yes \
    "$(grep -qi ":$(printf '%04X' "$port") " /proc/net/udp && echo yes || echo no)"
  check "state" active/running "$(prop ActiveState)/$(prop SubState)"
  check "status text" "receiving on 127.0.0.1:$port" "$(prop StatusText)"
  # Idle for longer than WatchdogSec=: the pings keep it running.
  sleep 3
  check "state after 3 s idle (WatchdogSec=$(prop WatchdogUSec))" active/running \
    "$(prop ActiveState)/$(prop SubState)"
  # The writer stalls (the test hook in ExecStart=) on the first MiB of a file: the pings stop
  # and systemd kills the daemon.
  "$send_bin" "$file" --dest "127.0.0.1:$port" > "$work/um-send.log" 2>&1
  for _ in $(seq 80); do [[ "$(prop Result)" == watchdog ]] && break; sleep 0.1; done
  check "result with the writer stalled" watchdog "$(prop Result)"
  # Started again: the stalled file's leftovers are swept; a stop ends it cleanly (STOPPING=1,
  # then exit 0).
  sc reset-failed ddft-live.service
  if sc start ddft-live.service; then say PASS "second start"; else say FAIL "second start"; fi
  check "leftover of the killed run named at start" yes \
    "$(grep -qE 'FAILED: the receiver stopped .* found at start-up' "$log" && echo yes || echo no)"
  sc stop ddft-live.service
  check "stop: result" success "$(prop Result)"
  check "stop: exit status" 0 "$(prop ExecMainStatus)"
  # The same watchdog kill through a transient service, as section 6 runs it under a systemd
  # PID 1: the user manager proves that check here.
  transient_watchdog --user "$(realpath "$recv_bin_for_um")" "$send_bin" "$work/transient" "$file"
  exit 0
fi

# Absolute paths: ExecStart= takes no other, and sections 5 and 6 run from other users/folders.
unit=$(realpath "$1") conf=$(realpath "$2") send_bin=$(realpath "$3") recv_bin=$(realpath "$4")
send_unit= send_conf=
if (($# >= 6)); then send_unit=$(realpath "$5") send_conf=$(realpath "$6"); fi
# The most exposure `systemd-analyze security` may give the shipped unit (SECURITY.md has its
# rating): a hardening directive dropped from the unit fails here.
kMaxExposure=1.5

work=$(mktemp -d)
rx= listener= live_unit= live_dir= live_logs=
cleanup() {
  [[ -n "$rx" ]] && kill "$rx" 2>/dev/null
  [[ -n "$listener" ]] && kill "$listener" 2>/dev/null
  if [[ -n "$live_unit" ]]; then
    systemctl stop "$live_unit" 2>/dev/null
    rm -f "/run/systemd/system/$live_unit"
    systemctl daemon-reload 2>/dev/null
  fi
  [[ -n "$live_dir" ]] && rm -rf "$live_dir"
  [[ -n "$live_logs" ]] && rm -rf "/var/log/$live_logs"
  rm -rf "$work"
}
trap cleanup EXIT
pass=0 failures=0 skipped_core=0
ok() { pass=$((pass + 1)); }
bad() { failures=$((failures + 1)); echo "FAIL $*"; }
skip() { echo "SKIP $*"; }
expect() { if [[ "$2" == "$3" ]]; then ok; else bad "$1: expected '$2', got '$3'"; fi; }
port() { echo $((20000 + RANDOM % 30000)); }

# --- 1. Directives. Only [Service] lines count; comments never match "^Key=".
# The unit whose [Service] lines value(), items() and allowed_calls() read.
service="$work/service"
sed -n '/^\[Service\]/,/^\[/p' "$unit" | grep -E '^[A-Za-z]+=' > "$service"
# The last assignment of KEY (systemd's rule for single-valued settings); "<unset>" when absent.
value() {
  local v
  v=$(grep -E "^$1=" "$service" | tail -n 1) || { echo "<unset>"; return; }
  echo "${v#*=}"
}
# A list setting: every assignment appends, an empty one resets. One item a line.
items() {
  local line list=()
  while IFS= read -r line; do
    line=${line#*=}
    if [[ -z "$line" ]]; then list=(); else read -ra more <<< "$line" && list+=("${more[@]}"); fi
  done < <(grep -E "^$1=" "$service")
  ((${#list[@]})) && printf '%s\n' "${list[@]}"
}
# who: what the messages of want() name (the sender's unit in section 7).
who=
want() { expect "$who$1=" "$2" "$(value "$1")"; }

expect "User= is set, and not root" yes \
  "$([[ "$(value User)" != "<unset>" && "$(value User)" != root && "$(value User)" != 0 ]] &&
    echo yes || echo "no ($(value User))")"
want User ddft
want Group ddft
expect "DynamicUser= (files need a stable owner)" no \
  "$([[ "$(value DynamicUser)" =~ ^(yes|true|1|on)$ ]] && echo yes || echo no)"
want NoNewPrivileges yes
want ProtectSystem strict
# Ready means ready: started once the daemon says READY=1 (ring prepared, port bound), only the
# daemon may say it, a start long enough for a big ring, and a watchdog that restarts it.
want Type notify
want NotifyAccess main
want WatchdogSec 30s
want TimeoutStartSec 300
want Restart on-failure
want PrivateTmp yes
# Present and empty: no capability at all. Absent would mean the full set.
want CapabilityBoundingSet ""
want AmbientCapabilities ""
for kv in ProtectHome=yes PrivateDevices=yes PrivateMounts=yes PrivateIPC=yes RemoveIPC=yes \
  ProtectKernelTunables=yes ProtectKernelModules=yes ProtectKernelLogs=yes \
  ProtectControlGroups=yes ProtectClock=yes ProtectHostname=yes ProtectProc=invisible \
  RestrictNamespaces=yes RestrictRealtime=yes RestrictSUIDSGID=yes LockPersonality=yes \
  MemoryDenyWriteExecute=yes SystemCallArchitectures=native SystemCallErrorNumber=EPERM \
  UMask=0027 Nice=-10 IOSchedulingClass=realtime LimitMEMLOCK=infinity LogsDirectory=ddft; do
  want "${kv%%=*}" "${kv#*=}"
done
expect "RestrictAddressFamilies=" "AF_INET AF_INET6 AF_UNIX" \
  "$(items RestrictAddressFamilies | sort | xargs)"
# (Here-strings, not pipes into grep -q: with pipefail, an early grep exit fails the pipe.)
grep -qx '@system-service' <<< "$(items SystemCallFilter)" && ok ||
  bad "SystemCallFilter= does not start from @system-service"
# ... and takes away what the receiver never calls (setpriority, ioprio_set, chown, setuid, ...).
for g in @privileged @resources; do
  grep -qE "^SystemCallFilter=~.*$g( |$)" "$service" && ok || bad "SystemCallFilter= keeps $g"
done

# ReadWritePaths= must name exactly the folders the example config writes to: the output folder,
# the state and failed-files folders when they lie outside it, and the log folder (the folder of log-file, or
# /var/log/<LogsDirectory=> when the config leaves log-file unset). A "-" prefix only makes a
# missing path non-fatal.
conf_value() {  # KEY [FILE]: the value of KEY in FILE (default: the receiver's config)
  sed -nE "s/^[[:space:]]*$1[[:space:]]*=[[:space:]]*\"?([^\"]*)\"?[[:space:]]*$/\1/p" \
    "${2:-$conf}" | tail -n 1
}
output=$(conf_value output)
failed=$(conf_value failed-dir)
state=$(conf_value state-dir)
log_file=$(conf_value log-file)
[[ -n "$output" ]] || bad "no output in $conf"
expected=("$output")
[[ -n "$state" && "$state" != "$output"/* ]] && expected+=("$state")
[[ -n "$failed" && "$failed" != "$output"/* && "$failed" != "$state"/* ]] && expected+=("$failed")
if [[ -n "$log_file" ]]; then
  expected+=("$(dirname "$log_file")")
else
  expected+=("/var/log/$(value LogsDirectory)")
fi
expect "ReadWritePaths= (output, state, failed and log folders of $(basename "$conf"))" \
  "$(printf '%s\n' "${expected[@]}" | sort | xargs)" \
  "$(items ReadWritePaths | sed -E 's/^[-+]+//' | sort | xargs)"
grep -qE '^(ReadWriteDirectories|InaccessiblePaths|BindPaths)=' "$service" &&
  bad "writable paths set outside ReadWritePaths=" || ok

# The unit under test, ExecStart pointed at this build's binary (verify checks that it exists).
copy="$work/dd_file_receive.service"
sed "s|/usr/bin/dd_file_receive|$recv_bin|" "$unit" > "$copy"

# --- 2, 3. systemd-analyze.
if command -v systemd-analyze > /dev/null; then
  systemd-analyze --version | head -n 1
  # It prints nothing for a good unit: any line (unknown key, bad value, missing binary) fails.
  # It does not check that User= exists, so a machine without the ddft user passes; section 6
  # runs the unit as nobody for that reason.
  out=$(systemd-analyze verify "$copy" 2>&1)
  expect "systemd-analyze verify status" 0 "$?"
  [[ -z "$out" ]] && ok || bad "systemd-analyze verify printed: $out"

  systemd-analyze security --offline=yes "$copy" > "$work/security" 2>&1
  exposure=$(sed -nE 's/.*Overall exposure level for [^:]*: ([0-9.]+).*/\1/p' "$work/security")
  if [[ -z "$exposure" ]]; then
    bad "systemd-analyze security gave no exposure: $(cat "$work/security")"
  else
    echo "exposure: $exposure (must be below $kMaxExposure)"
    if awk -v e="$exposure" -v m="$kMaxExposure" 'BEGIN { exit !(e < m) }'; then
      ok
    else
      bad "exposure $exposure is not below $kMaxExposure; what is left open:"
      grep '✗' "$work/security"
    fi
  fi
else
  skip "systemd-analyze verify and security: systemd-analyze is not installed" \
    "(scripts/setup.sh installs the systemd package)"
  skipped_core=1
fi

# Starts COMMAND (a receiver, or a command that ends by running one) in the background, sets rx
# and waits for the receiver's start line in LOG. Returns 1 when it does not start.
start_rx() {  # LOG COMMAND...
  local log=$1
  shift
  "$@" &
  rx=$!
  for _ in $(seq 100); do grep -q "receiving on" "$log" 2>/dev/null && return 0; sleep 0.1; done
  bad "receiver did not start: $(cat "$log" 2>/dev/null)"
  return 1
}
# Sends FILE and waits until LOG holds COUNT (default 1) verified transfers of NAME.
send_file() {  # FILE PORT LOG NAME [COUNT]
  "$send_bin" "$1" --dest "127.0.0.1:$2" > "$work/send.log" 2>&1 ||
    bad "send $1: $(cat "$work/send.log")"
  for _ in $(seq 100); do
    [[ $(grep -c "File: $4.*B2B Passed" "$3" 2>/dev/null) -ge ${5:-1} ]] && return 0
    sleep 0.1
  done
  bad "$4 not received: $(cat "$3")"
}
head -c 3000000 /dev/urandom > "$work/a.bin"

# All system calls of SET (@groups expanded), one a line.
expand_calls() {
  local t
  for t in "$@"; do
    if [[ "$t" == @* ]]; then
      systemd-analyze syscall-filter "$t" | sed -nE '2,$ s/^[[:space:]]+([^#[:space:]]+).*/\1/p' |
        while read -r c; do expand_calls "$c"; done
    else
      echo "$t"
    fi
  done
}

# The system calls the filters of $service allow, one a line, into $work/allowed. The allow list,
# in order: "~" lines take away. The settings that add a filter of their own take away their
# group too (PrivateDevices= @raw-io, ProtectClock= @clock, ProtectKernelModules= @module).
allowed_calls() {
  local line toks
  : > "$work/allowed"
  while IFS= read -r line; do
    line=${line#*=}
    read -ra toks <<< "${line#\~}"
    if [[ -z "$line" ]]; then
      : > "$work/allowed"
    elif [[ "$line" == \~* ]]; then
      expand_calls "${toks[@]}" | sort -u > "$work/deny"
      grep -vxFf "$work/deny" "$work/allowed" > "$work/allowed.new"
      mv "$work/allowed.new" "$work/allowed"
    else
      expand_calls "${toks[@]}" >> "$work/allowed"
    fi
  done < <(grep -E '^SystemCallFilter=' "$service")
  expand_calls @raw-io @clock @module | sort -u > "$work/deny"
  sort -u "$work/allowed" | grep -vxFf "$work/deny" > "$work/allowed.new"
  mv "$work/allowed.new" "$work/allowed"
}
# The names of the system calls in strace output FILE, one a line.
traced_calls() {
  sed -E 's/^[0-9]+ +//; s/^<\.\.\. ([a-z_0-9]+) resumed>.*/\1(/' "$1" |
    grep -oE '^[a-z_0-9]+\(' | tr -d '(' | sort -u
}
strace_ok() { command -v strace > /dev/null && strace -f -qq -o /dev/null true 2> /dev/null; }
# Under the sanitizer suite, LeakSanitizer cannot run in a traced program: it would end it with
# status 1 at exit. The traced runs skip the leak check (every other sanitizer check still runs).
traced_asan_options="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"

# --- 4. What the receiver really calls, against the filters of the unit.
if ! strace_ok; then
  skip "system call check: strace is missing or may not trace here (scripts/setup.sh installs it)"
elif ! command -v systemd-analyze > /dev/null; then
  skip "system call check: needs systemd-analyze to expand the filter's groups"
else
  allowed_calls
  for c in io_uring_setup io_uring_enter io_uring_register; do
    grep -qx "$c" "$work/allowed" && ok || bad "SystemCallFilter= refuses $c (the io_uring writer)"
  done

  # The example config as the unit runs it (io_uring, direct IO), only smaller, with
  # --lock-memory, a collision (the same name twice) and a log reopen. As under the unit, it
  # notifies a service manager, here a python3 listener on NOTIFY_SOCKET, with a 1 s watchdog
  # (without python3 the socket is missing: the calls are made all the same, and fail).
  p=$(port)
  mkdir -p "$work/trace-out"
  notify_sock="$work/notify"
  if command -v python3 > /dev/null; then
    python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a") as out:
    while True:
        out.write(s.recv(4096).decode().replace("\n", " ") + "\n")
        out.flush()
' "$notify_sock" "$work/notified" &
    listener=$!
    for _ in $(seq 50); do [[ -S "$notify_sock" ]] && break; sleep 0.1; done
  fi
  # WATCHDOG_PID is unset: strace's child is the daemon, whose PID is not known beforehand.
  if NOTIFY_SOCKET=$notify_sock WATCHDOG_USEC=1000000 ASAN_OPTIONS=$traced_asan_options \
    start_rx "$work/trace.log" \
    strace -f -qq -o "$work/strace" "$recv_bin" --config "$conf" \
    --listen "127.0.0.1:$p" --output "$work/trace-out" --failed-dir "$work/trace-out/.failed" \
    --buffer-mb 128 --lock-memory --log-file "$work/trace.log" --quiet; then
    send_file "$work/a.bin" "$p" "$work/trace.log" a.bin 1
    send_file "$work/a.bin" "$p" "$work/trace.log" a.bin 2
    # Signals go to the receiver, strace's child; strace ends with it.
    tracee=$(pgrep -P "$rx")
    kill -HUP "$tracee"
    sleep 1.2  # (at least two watchdog pings)
    kill -TERM "$tracee"
  fi
  kill "$rx" 2> /dev/null
  wait "$rx"
  rx=
  if [[ -n "$listener" ]]; then
    kill "$listener" 2> /dev/null
    wait "$listener" 2> /dev/null
    listener=
    for m in READY=1 WATCHDOG=1 STOPPING=1; do
      grep -qE "(^| )$m( |$)" "$work/notified" 2> /dev/null && ok ||
        bad "traced run: no $m sent to NOTIFY_SOCKET: $(cat "$work/notified" 2> /dev/null)"
    done
  else
    skip "traced run: what was sent to NOTIFY_SOCKET (python3 is missing)"
  fi
  grep -qE 'sendmsg\(.*sun_path="'"$notify_sock"'"' "$work/strace" && ok ||
    bad "traced run: no sendmsg to NOTIFY_SOCKET traced"
  traced_calls "$work/strace" > "$work/called"
  echo "system calls made: $(wc -l < "$work/called")"
  [[ -s "$work/called" ]] && ok || bad "strace recorded no system call"
  grep -q io_uring_enter "$work/called" ||
    echo "note: no io_uring call traced (the kernel or container refused a ring)"
  outside=$(grep -vxFf "$work/allowed" "$work/called" | xargs)
  [[ -z "$outside" ]] && ok || bad "system calls outside SystemCallFilter=: $outside"
  families=$(grep -oE 'socket\(AF_[A-Z0-9]+' "$work/strace" | sed 's/socket(//' | sort -u | xargs)
  for f in $families; do
    grep -qx "$f" <<< "$(items RestrictAddressFamilies)" && ok || bad "socket family $f not allowed"
  done
  grep -E 'mprotect\(.*PROT_EXEC|mmap\(.*PROT_WRITE\|PROT_EXEC' "$work/strace" &&
    bad "writable and executable memory (MemoryDenyWriteExecute=)" || ok
fi

# --- 5. The unit's credentials without systemd: the priorities set while still root (as the
#        service manager does), then setpriv drops to nobody with no capabilities, no ambient or
#        inheritable ones and no_new_privs, the way User=, CapabilityBoundingSet=,
#        AmbientCapabilities= and NoNewPrivileges= leave the process.
if [[ $(id -u) -ne 0 ]]; then
  skip "credential emulation: needs root to set nice $(value Nice) and the realtime IO class"
elif ! command -v setpriv > /dev/null || ! ionice -c 1 -n 2 true 2> /dev/null; then
  skip "credential emulation: setpriv is missing or the realtime IO class is refused here"
else
  nobody=65534
  io_prio=$(value IOSchedulingPriority)
  emu="$work/emu"
  mkdir -p "$emu/out"
  chmod 755 "$work" "$emu"
  chown "$nobody:$nobody" "$emu/out" "$emu"
  # LimitMEMLOCK=infinity when this machine allows it; else its hard limit, with a ring that
  # fits (a ring of at most 8 MiB, the smallest the receiver takes, in 9 MiB of buffering).
  hard=$(ulimit -Hl)
  if prlimit --memlock=unlimited:unlimited true 2> /dev/null; then
    memlock=unlimited:unlimited buf=(--buffer-mb 128 --lock-memory)
  elif ((hard >= 8192)); then
    memlock=$((hard * 1024)):$((hard * 1024))
    buf=(--buffer-mb 9 --write-buffers 4 --write-block-kb 256 --lock-memory)
    echo "note: LimitMEMLOCK=infinity is refused here (hard limit $hard KiB): an 8 MiB ring locked"
  else
    memlock=$((hard * 1024)):$((hard * 1024)) buf=(--buffer-mb 128)
    skip "emulation of --lock-memory: the hard RLIMIT_MEMLOCK here is $hard KiB"
  fi
  p=$(port)
  start_rx "$emu/rx.log" nice -n "$(value Nice)" ionice -c 1 -n "$io_prio" \
    prlimit --memlock="$memlock" -- \
    setpriv --reuid=$nobody --regid=$nobody --clear-groups --bounding-set=-all --inh-caps=-all \
    --no-new-privs -- "$recv_bin" --config "$conf" --listen "127.0.0.1:$p" --output "$emu/out" \
    --failed-dir "$emu/out/.failed" "${buf[@]}" --log-file "$emu/rx.log" --quiet
  if [[ -n "$rx" ]] && [[ -d /proc/$rx ]]; then
    expect "emulation: process" dd_file_receive "$(cat "/proc/$rx/comm")"
    for f in CapEff CapPrm CapBnd CapAmb CapInh; do
      expect "emulation: $f" 0000000000000000 \
        "$(awk -v f="$f:" '$1 == f {print $2}' "/proc/$rx/status")"
    done
    expect "emulation: NoNewPrivs" 1 "$(awk '$1 == "NoNewPrivs:" {print $2}' "/proc/$rx/status")"
    # Every thread (link reader, writers, ...) runs at the unit's nice value and IO class.
    for t in /proc/$rx/task/*; do
      expect "emulation: nice of thread $(cat "$t/comm")" "$(value Nice)" \
        "$(awk '{print $19}' "$t/stat")"
      expect "emulation: IO class of thread $(cat "$t/comm")" "realtime: prio $io_prio" \
        "$(ionice -p "${t##*/}")"
    done
    send_file "$work/a.bin" "$p" "$emu/rx.log" a.bin 1
    expect "emulation: received file's owner" $nobody "$(stat -c %u "$emu/out/a.bin" 2>/dev/null)"
    grep -q "cannot lock" "$emu/rx.log" && bad "emulation: $(grep "cannot lock" "$emu/rx.log")" ||
      ok
    kill -TERM "$rx"
    wait "$rx"
    expect "emulation: SIGTERM exit status" 0 "$?"
    rx=
  fi
fi

# --- 6. The unit for real, which needs systemd as PID 1 and root.
pid1=$(ps -p 1 -o comm= 2>/dev/null)
if [[ "$pid1" != systemd ]]; then
  skip "starting the unit: PID 1 is '${pid1:-unknown}', not systemd (a container?)"
elif [[ $(id -u) -ne 0 ]]; then
  skip "starting the unit: needs root to install a unit in /run/systemd/system"
else
  # Outside /tmp (PrivateTmp=) and /home (ProtectHome=), the binary and the config too. The ddft
  # user may not exist here: the unit runs as nobody, in its own folders, everything else as
  # written.
  live_dir=$(mktemp -d /var/lib/ddft-systemd-test.XXXXXX)
  live_logs=ddft-systemd-test-$$
  live_unit=ddft-systemd-test-$$.service
  chmod 755 "$live_dir"
  mkdir -p "$live_dir/bin" "$live_dir/out"
  cp "$recv_bin" "$live_dir/bin/dd_file_receive"
  install -m 0644 "$conf" "$live_dir/dd_file_receive.conf"
  chown nobody "$live_dir/out"
  p=$(port)
  log="/var/log/$live_logs/rx.log"
  args="--config $live_dir/dd_file_receive.conf --listen 127.0.0.1:$p --output $live_dir/out"
  args+=" --failed-dir $live_dir/out/.failed --buffer-mb 128 --log-file $log --quiet"
  sed -E -e "s|^ExecStart=.*|ExecStart=$live_dir/bin/dd_file_receive $args|" \
    -e "s|^User=.*|User=nobody|" -e "s|^Group=.*|Group=$(id -gn nobody)|" \
    -e "s|^ReadWritePaths=.*|ReadWritePaths=$live_dir/out /var/log/$live_logs|" \
    -e "s|^LogsDirectory=.*|LogsDirectory=$live_logs|" \
    -e "s|^Restart=.*|Restart=no|" "$unit" > "/run/systemd/system/$live_unit"
  systemctl daemon-reload
  if systemctl start "$live_unit"; then
    for _ in $(seq 100); do grep -q "receiving on" "$log" 2>/dev/null && break; sleep 0.1; done
    main=$(systemctl show -p MainPID --value "$live_unit")
    expect "live: CapEff" 0000000000000000 \
      "$(awk '$1 == "CapEff:" {print $2}' "/proc/$main/status")"
    expect "live: nice" "$(value Nice)" "$(awk '{print $19}' "/proc/$main/stat")"
    # Type=notify: `systemctl start` returned once READY=1 came, with the status line.
    contains_status=$(systemctl show -p StatusText --value "$live_unit")
    [[ "$contains_status" == "receiving on 127.0.0.1:$p"* ]] && ok ||
      bad "live: status text: '$contains_status'"
    expect "live: watchdog" 30s "$(systemctl show -p WatchdogUSec --value "$live_unit")"
    send_file "$work/a.bin" "$p" "$log" a.bin 1
    systemctl stop "$live_unit"
    expect "live: result" success "$(systemctl show -p Result --value "$live_unit")"
  else
    bad "live: the unit did not start: $(journalctl -u "$live_unit" -n 20 --no-pager 2>&1)"
  fi
  # The watchdog killing a stalled writer, as under the user manager of 6b.
  head -c 8000000 /dev/urandom > "$work/stall.bin"
  while read -r verdict rest; do
    case "$verdict" in
      PASS) ok ;;
      FAIL) bad "$rest" ;;
    esac
  done < <(transient_watchdog --system "$recv_bin" "$send_bin" "$work/transient" "$work/stall.bin")
fi

# --- 6b. Where PID 1 is not systemd: the unit under a real systemd user manager, in a private
#         mount namespace (see the top of this file).
if [[ "$pid1" == systemd ]]; then
  : # section 6 ran
elif [[ $(id -u) -ne 0 ]] || ! unshare --mount true 2> /dev/null || [[ ! -x /lib/systemd/systemd ]]
then
  skip "the unit under a user manager: needs root, unshare --mount and /lib/systemd/systemd"
else
  um="$work/um"
  mkdir -p "$um/out"
  p=$(port)
  # A watchdog of 2 s (the unit's own value is checked in section 1) and the writer stall hook
  # (6 s after 1 MiB); no core dump of the buffer when the watchdog kills it.
  args="--config $conf --listen 127.0.0.1:$p --output $um/out --failed-dir $um/out/.failed"
  args+=" --buffer-mb 512 --log-file $um/out/rx.log --quiet --test-stall-writer-s 6"
  args+=" --test-stall-after-mb 1"
  sed -E -e "s|^ExecStart=.*|ExecStart=$recv_bin $args|" \
    -e '/^(User|Group|LogsDirectory|LogsDirectoryMode)=/d' \
    -e '/^(ProtectSystem|ReadWritePaths|PrivateTmp|PrivateMounts|ProtectHome|PrivateDevices)=/d' \
    -e '/^(PrivateIPC|ProtectKernelTunables|ProtectKernelModules|ProtectKernelLogs)=/d' \
    -e '/^(ProtectControlGroups|ProtectProc|ProtectHostname|ProtectClock)=/d' \
    -e 's|^Restart=.*|Restart=no|' -e 's|^WatchdogSec=.*|WatchdogSec=2s|' "$unit" > "$um/unit"
  echo "LimitCORE=0" >> "$um/unit"
  head -c 8000000 /dev/urandom > "$um/stall.bin"
  timeout 100 unshare --mount --propagation private bash "$self" --user-manager "$um/unit" "$um" \
    "$send_bin" "$p" "$um/out/rx.log" "$um/stall.bin" "$recv_bin" > "$um/result" 2>&1
  status=$?
  if ((status == 77)); then
    skip "the unit under a user manager: systemd --user does not run here"
  else
    grep -E '^user manager: |^FAIL |^PASS transient' "$um/result"
    while read -r verdict rest; do
      case "$verdict" in
        PASS) ok ;;
        FAIL) bad "$rest" ;;
      esac
    done < "$um/result"
    grep -qE '^(PASS|FAIL) ' "$um/result" ||
      bad "the unit under a user manager: no result (status $status): $(cat "$um/result")"
  fi
fi

# --- 7. The hot-folder sender's unit: what applies of the above (it runs no faster than others,
#        so no Nice=, IO class or LimitMEMLOCK=; it reads, so no io_uring writer, but io_uring
#        reads).
if [[ -z "$send_unit" ]]; then
  skip "the hot-folder sender's unit: not given (SEND_UNIT SEND_CONF)"
else
  echo "--- $(basename "$send_unit")"
  service="$work/send-service" who="sender: "
  sed -n '/^\[Service\]/,/^\[/p' "$send_unit" | grep -E '^[A-Za-z]+=' > "$service"
  expect "sender: User= is set, and not root" yes \
    "$([[ "$(value User)" != "<unset>" && "$(value User)" != root && "$(value User)" != 0 ]] &&
      echo yes || echo "no ($(value User))")"
  want User ddft
  want Group ddft
  expect "sender: DynamicUser= (the journal and sent files need a stable owner)" no \
    "$([[ "$(value DynamicUser)" =~ ^(yes|true|1|on)$ ]] && echo yes || echo no)"
  want CapabilityBoundingSet ""
  want AmbientCapabilities ""
  for kv in NoNewPrivileges=yes ProtectSystem=strict PrivateTmp=yes ProtectHome=yes \
    PrivateDevices=yes PrivateMounts=yes PrivateIPC=yes RemoveIPC=yes ProtectKernelTunables=yes \
    ProtectKernelModules=yes ProtectKernelLogs=yes ProtectControlGroups=yes ProtectClock=yes \
    ProtectHostname=yes ProtectProc=invisible ProcSubset=pid RestrictNamespaces=yes \
    RestrictRealtime=yes RestrictSUIDSGID=yes LockPersonality=yes MemoryDenyWriteExecute=yes \
    SystemCallArchitectures=native SystemCallErrorNumber=EPERM UMask=0027 LogsDirectory=ddft \
    SocketBindDeny=any; do
    want "${kv%%=*}" "${kv#*=}"
  done
  expect "sender: RestrictAddressFamilies=" "AF_INET AF_INET6 AF_UNIX" \
    "$(items RestrictAddressFamilies | sort | xargs)"
  grep -qx '@system-service' <<< "$(items SystemCallFilter)" && ok ||
    bad "sender: SystemCallFilter= does not start from @system-service"
  for g in @privileged @resources; do
    grep -qE "^SystemCallFilter=~.*$g( |$)" "$service" && ok ||
      bad "sender: SystemCallFilter= keeps $g"
  done

  # ExecStart= runs the installed sender on the example config's path, watching a folder.
  read -ra argv <<< "$(value ExecStart)"
  arg_of() {  # the value after option $1 in ExecStart=
    local i
    for ((i = 1; i + 1 < ${#argv[@]}; i++)); do
      [[ "${argv[i]}" == "$1" ]] && { echo "${argv[i + 1]}"; return; }
    done
  }
  expect "sender: ExecStart= program" /usr/bin/dd_file_send "${argv[0]}"
  expect "sender: ExecStart= --config" /etc/ddft/dd_file_send.conf "$(arg_of --config)"
  watch=$(arg_of --watch) sent=$(arg_of --sent-dir)
  [[ -n "$watch" && -n "$sent" ]] && ok || bad "sender: ExecStart= lacks --watch or --sent-dir"
  # The hot folder and the sent folder must be writable through ONE ReadWritePaths= entry, their
  # nearest common folder: each entry is a bind mount, and rename(2), which moves a sent file,
  # fails with EXDEV across mount points even within one file system. Nothing else is writable
  # but the log folder (the folder of the config's log-file, else /var/log/<LogsDirectory=>).
  # The watch journal's default place is inside the hot folder.
  mapfile -t rw < <(items ReadWritePaths | sed -E 's/^[-+]+//')
  holder() {  # the deepest entry that is folder $1 or holds it
    local best= e
    for e in "${rw[@]}"; do
      if [[ "$1" == "$e" || "$1" == "$e"/* ]] && ((${#e} > ${#best})); then best=$e; fi
    done
    echo "$best"
  }
  common=$watch
  while [[ "$sent" != "$common" && "$sent" != "$common"/* ]]; do common=$(dirname "$common"); done
  expect "sender: the ReadWritePaths= entry holding --watch $watch" "$common" "$(holder "$watch")"
  expect "sender: the ReadWritePaths= entry holding --sent-dir $sent" "$common" "$(holder "$sent")"
  send_log=$(conf_value log-file "$send_conf")
  log_dir=/var/log/$(value LogsDirectory)
  [[ -n "$send_log" ]] && log_dir=$(dirname "$send_log")
  expect "sender: ReadWritePaths= (the folders' common folder and the log folder)" \
    "$(printf '%s\n' "$common" "$log_dir" | sort -u | xargs)" \
    "$(printf '%s\n' "${rw[@]}" | sort | xargs)"
  grep -qE '^(ReadWriteDirectories|InaccessiblePaths|BindPaths)=' "$service" &&
    bad "sender: writable paths set outside ReadWritePaths=" || ok

  copy="$work/dd_file_send-watch.service"
  sed "s|/usr/bin/dd_file_send|$send_bin|" "$send_unit" > "$copy"
  if command -v systemd-analyze > /dev/null; then
    # --man=no: the man page its Documentation= names is installed by the package, whose check
    # (scripts/package_check.sh) verifies the unit with it.
    out=$(systemd-analyze verify --man=no "$copy" 2>&1)
    expect "sender: systemd-analyze verify status" 0 "$?"
    [[ -z "$out" ]] && ok || bad "sender: systemd-analyze verify printed: $out"
    systemd-analyze security --offline=yes "$copy" > "$work/security-send" 2>&1
    exposure=$(sed -nE 's/.*Overall exposure level for [^:]*: ([0-9.]+).*/\1/p' \
      "$work/security-send")
    if [[ -z "$exposure" ]]; then
      bad "sender: systemd-analyze security gave no exposure: $(cat "$work/security-send")"
    elif awk -v e="$exposure" -v m="$kMaxExposure" 'BEGIN { exit !(e < m) }'; then
      echo "sender exposure: $exposure (must be below $kMaxExposure)"
      ok
    else
      bad "sender: exposure $exposure is not below $kMaxExposure; what is left open:"
      grep '✗' "$work/security-send"
    fi
  fi

  # What a send really calls (a one-shot send of the example config; the hot folder's own calls,
  # inotify and rename, are checked against the filter by name).
  if ! strace_ok || ! command -v systemd-analyze > /dev/null; then
    skip "sender: system call check: needs strace and systemd-analyze"
  else
    allowed_calls
    for c in io_uring_setup io_uring_enter io_uring_register inotify_init1 inotify_add_watch \
      inotify_rm_watch renameat2 unlinkat sendmmsg; do
      grep -qx "$c" "$work/allowed" && ok || bad "sender: SystemCallFilter= refuses $c"
    done
    p=$(port)
    mkdir -p "$work/send-out"
    if start_rx "$work/send-rx.log" "$recv_bin" --listen "127.0.0.1:$p" \
      --output "$work/send-out" --buffer-mb 128 --log-file "$work/send-rx.log" --quiet; then
      ASAN_OPTIONS=$traced_asan_options strace -f -qq -o "$work/strace-send" "$send_bin" \
        --config "$send_conf" "$work/a.bin" \
        --dest "127.0.0.1:$p" > "$work/send.log" 2>&1
      expect "sender: traced send status" 0 "$?"
      for _ in $(seq 100); do
        grep -q "File: a.bin.*Passed" "$work/send-rx.log" && break
        sleep 0.1
      done
      grep -q "File: a.bin.*Passed" "$work/send-rx.log" && ok ||
        bad "sender: the traced send did not arrive: $(cat "$work/send.log")"
      kill -TERM "$rx"
      wait "$rx"
      rx=
    fi
    traced_calls "$work/strace-send" > "$work/called-send"
    echo "sender: system calls made: $(wc -l < "$work/called-send")"
    [[ -s "$work/called-send" ]] && ok || bad "sender: strace recorded no system call"
    outside=$(grep -vxFf "$work/allowed" "$work/called-send" | xargs)
    [[ -z "$outside" ]] && ok || bad "sender: system calls outside SystemCallFilter=: $outside"
    families=$(grep -oE 'socket\(AF_[A-Z0-9]+' "$work/strace-send" | sed 's/socket(//' |
      sort -u | xargs)
    for f in $families; do
      grep -qx "$f" <<< "$(items RestrictAddressFamilies)" && ok ||
        bad "sender: socket family $f not allowed"
    done
    # SocketBindDeny=any: the sender must never bind (its UDP socket is only connected).
    grep -qx bind "$work/called-send" && bad "sender: it calls bind(), refused by SocketBindDeny=" ||
      ok
    # ProcSubset=pid: nothing under /proc but processes.
    procs=$(grep -oE '"/proc/[^"]*"' "$work/strace-send" |
      grep -vE '^"/proc/(self|thread-self|[0-9]+)(/|")' | sort -u | xargs)
    [[ -z "$procs" ]] && ok || bad "sender: opens /proc beyond processes (ProcSubset=pid): $procs"
    grep -E 'mprotect\(.*PROT_EXEC|mmap\(.*PROT_WRITE\|PROT_EXEC' "$work/strace-send" &&
      bad "sender: writable and executable memory (MemoryDenyWriteExecute=)" || ok
  fi

  # Its credentials: as nobody, no capabilities, no_new_privs, the send works.
  if [[ $(id -u) -ne 0 ]]; then
    skip "sender: credential emulation: needs root to drop to nobody"
  elif ! command -v setpriv > /dev/null; then
    skip "sender: credential emulation: setpriv is missing"
  else
    chmod 755 "$work"
    chmod 644 "$work/a.bin"
    p=$(port)
    mkdir -p "$work/send-emu"
    # StateDirectory=: a state folder of the service's own, made for its user.
    install -d -o 65534 -g 65534 -m "$(value StateDirectoryMode)" "$work/send-state"
    if start_rx "$work/send-emu.log" "$recv_bin" --listen "127.0.0.1:$p" \
      --output "$work/send-emu" --buffer-mb 128 --log-file "$work/send-emu.log" --quiet; then
      setpriv --reuid=65534 --regid=65534 --clear-groups --bounding-set=-all --inh-caps=-all \
        --no-new-privs -- "$send_bin" --config "$send_conf" "$work/a.bin" --dest "127.0.0.1:$p" \
        --state-dir "$work/send-state" > "$work/send.log" 2>&1
      expect "sender: emulation: send status" 0 "$?"
      for _ in $(seq 100); do
        grep -q "File: a.bin.*Passed" "$work/send-emu.log" && break
        sleep 0.1
      done
      grep -q "File: a.bin.*Passed" "$work/send-emu.log" && ok ||
        bad "sender: emulation: not received: $(cat "$work/send.log")"
      kill -TERM "$rx"
      wait "$rx"
      rx=
    fi
  fi
fi

echo "$pass passed, $failures failed"
((failures == 0)) || exit 1
((skipped_core == 0)) || exit 77
exit 0
