#!/usr/bin/env bash
# Builds the Debian package and checks it, as CI does (scripts/test.sh, part "package"):
#   1. cpack -G DEB in BUILD_DIR;
#   2. its control fields (dpkg-deb -I): name, version, architecture, Maintainer (a name and an
#      address), Depends (dpkg-shlibdeps's libraries and adduser), Recommends, the maintainer
#      scripts and the conffiles;
#   3. its file list (dpkg-deb -c): exactly the files expected (a man page for each program and
#      script, the changelog and the copyright file among them), owned by root, with their modes;
#   4. unpacked with dpkg-deb -x into a temp folder: each program's --version and --help, run from
#      there with the library path untouched (no RPATH, every library found, debug info
#      stripped), the scripts (owlDftsSend --dry-run and --version, dd_file_receive_daemon finding
#      the program beside it, dd_reconcile --help), every man page (man --warnings, its sections
#      and version), and a real loopback transfer between the unpacked dd_file_send and
#      dd_file_receive, which the unpacked dd_reconcile (its Python package found where the
#      package puts it) then reconciles;
#   5. every systemd unit with systemd-analyze verify, ExecStart= pointed into the unpacked tree
#      and man pointed at its man pages (the units' Documentation=);
#   6. the logrotate file, run for real on a copy pointed at a temp folder; the monitoring files
#      as installed (promtool check rules, the dashboard's JSON);
#   7. the maintainer scripts: sh -n, then (as root, where a private mount namespace with overlay
#      file systems is allowed) dpkg -i, a reinstall, dpkg -r and dpkg -P for real on overlays of
#      /etc, /usr, /var and /srv, which vanish afterwards: the user, the folders and their modes,
#      the installed dd_reconcile, what remove keeps and what purge removes (the units'
#      enablement too);
#   8. lintian: no error and no warning, and a copy broken on purpose flagged with both.
# A part that cannot run here says why. Everything it makes is removed at the end (the .deb stays
# in BUILD_DIR, where cpack puts it).
# Usage: package_check.sh BUILD_DIR
set -uo pipefail
self=$(realpath "${BASH_SOURCE[0]}")

# --- 7, inside the private mount namespace: install_test DEB WORK. Prints PASS/FAIL lines.
if [[ "${1:-}" == --install-test ]]; then
  deb=$2 work=$3
  say() { echo "$1 install: $2"; }
  check() { if [[ "$2" == "$3" ]]; then say PASS "$1"; else say FAIL "$1: expected '$2', got '$3'"; fi; }
  for d in etc usr var srv; do
    mkdir -p "$work/ovl/$d/upper" "$work/ovl/$d/work" "/$d"
    mount -t overlay overlay \
      -o "lowerdir=/$d,upperdir=$work/ovl/$d/upper,workdir=$work/ovl/$d/work" "/$d" || exit 77
  done
  # Without systemd here, whatever the host runs: the scripts must not reload the host's
  # service manager or apply its sysctl from inside the test.
  if [[ -d /run/systemd ]]; then mount -t tmpfs tmpfs /run/systemd || exit 77; fi
  export DEBIAN_FRONTEND=noninteractive
  getent passwd ddft > /dev/null && { say SKIP "a ddft user exists already"; exit 77; }
  if dpkg -i "$deb" > "$work/dpkg-i.log" 2>&1; then say PASS "dpkg -i"; else
    say FAIL "dpkg -i: $(tail -n 5 "$work/dpkg-i.log")"
    exit 0
  fi
  # The user and group the postinst made (with adduser, which the package depends on).
  IFS=: read -r _ _ uid _ _ home shell < <(getent passwd ddft)
  check "ddft's shell" /usr/sbin/nologin "$shell"
  check "ddft's home" /nonexistent "$home"
  check "ddft is a system user" yes "$( ((uid < 1000)) && echo yes || echo "no (uid $uid)")"
  check "group ddft" yes "$(getent group ddft > /dev/null && echo yes || echo no)"
  check "ddft's primary group" ddft "$(id -gn ddft)"
  for spec in "/srv/ddft 755 root root" "/srv/ddft/inbox 750 ddft ddft" \
    "/srv/ddft/outbox 2770 ddft ddft" "/srv/ddft/sent 750 ddft ddft" \
    "/var/log/ddft 750 ddft ddft"; do
    read -r dir mode owner group <<< "$spec"
    check "$dir" "$mode $owner $group" "$(stat -c '%a %U %G' "$dir" 2>&1)"
  done
  check "conffiles registered" "/etc/ddft/dd_file_receive.conf /etc/ddft/dd_file_send.conf /etc/logrotate.d/ddft" \
    "$(dpkg-query -W -f='${Conffiles}\n' ddft | awk 'NF {print $1}' | sort | xargs)"
  check "installed program" "dd_file_send $(dpkg-query -W -f='${Version}' ddft)" \
    "$(/usr/bin/dd_file_send --version 2>&1)"
  check "installed dd_reconcile --help" 0 "$(/usr/bin/dd_reconcile --help > /dev/null 2>&1; echo $?)"
  # (Unless this machine's dpkg leaves man pages out, as slim container images do.)
  if ! grep -qsE '^path-exclude[= ]+/usr/share/man' /etc/dpkg/dpkg.cfg /etc/dpkg/dpkg.cfg.d/*; then
    check "man dd_file_receive" /usr/share/man/man1/dd_file_receive.1.gz \
      "$(man -w dd_file_receive 2>&1)"
  fi
  # The operator enables the receiver (the link "systemctl enable" makes): the package keeps it
  # until purge, which removes it.
  wants=/etc/systemd/system/multi-user.target.wants/dd_file_receive.service
  mkdir -p "${wants%/*}"
  ln -s /usr/lib/systemd/system/dd_file_receive.service "$wants"
  linked() { [[ -L "$wants" ]] && echo yes || echo no; }
  # An upgrade (here a reinstall) keeps what the operator changed.
  chmod 0700 /srv/ddft/inbox
  echo "# changed" >> /etc/ddft/dd_file_receive.conf
  if dpkg -i --force-confold "$deb" > "$work/dpkg-i2.log" 2>&1; then say PASS "reinstall"; else
    say FAIL "reinstall: $(tail -n 5 "$work/dpkg-i2.log")"
  fi
  check "reinstall keeps the inbox's mode" 700 "$(stat -c %a /srv/ddft/inbox)"
  check "reinstall keeps a changed conffile" "# changed" "$(tail -n 1 /etc/ddft/dd_file_receive.conf)"
  check "reinstall keeps the unit enabled" yes "$(linked)"
  echo data > /srv/ddft/inbox/received.bin
  echo log > /var/log/ddft/dd_file_receive.log
  if dpkg -r ddft > "$work/dpkg-r.log" 2>&1; then say PASS "dpkg -r"; else
    say FAIL "dpkg -r: $(tail -n 5 "$work/dpkg-r.log")"
  fi
  check "remove: programs gone" no "$([[ -e /usr/bin/dd_file_send ]] && echo yes || echo no)"
  # (dd_reconcile writes no compiled Python beside its modules, which would outlive them.)
  check "remove: dd_reconcile's Python package gone" no \
    "$([[ -e /usr/share/ddft/python ]] && echo yes || echo no)"
  check "remove: conffiles kept" yes "$([[ -f /etc/ddft/dd_file_send.conf ]] && echo yes || echo no)"
  check "remove: logs kept" yes "$([[ -f /var/log/ddft/dd_file_receive.log ]] && echo yes || echo no)"
  check "remove: the unit's enablement kept" yes "$(linked)"
  if dpkg -P ddft > "$work/dpkg-p.log" 2>&1; then say PASS "dpkg -P"; else
    say FAIL "dpkg -P: $(tail -n 5 "$work/dpkg-p.log")"
  fi
  check "purge: conffiles gone" no "$([[ -e /etc/ddft/dd_file_send.conf ]] && echo yes || echo no)"
  check "purge: logs gone" no "$([[ -e /var/log/ddft ]] && echo yes || echo no)"
  check "purge: the unit's enablement gone" no "$(linked)"
  check "purge: received data kept" data "$(cat /srv/ddft/inbox/received.bin 2>&1)"
  check "purge: the user kept (files on disk are still its)" yes \
    "$(getent passwd ddft > /dev/null && echo yes || echo no)"
  exit 0
fi

build=$(realpath "${1:?usage: package_check.sh BUILD_DIR}")
repo=$(cd "$(dirname "$self")/.." && pwd)
work=$(mktemp -d)
rx=
cleanup() {
  [[ -n "$rx" ]] && kill "$rx" 2> /dev/null && wait "$rx" 2> /dev/null
  rm -rf "$work"
}
trap cleanup EXIT
pass=0 failures=0
ok() { pass=$((pass + 1)); }
bad() { failures=$((failures + 1)); echo "FAIL $*"; }
skip() { echo "SKIP $*"; }
expect() { if [[ "$2" == "$3" ]]; then ok; else bad "$1: expected '$2', got '$3'"; fi; }
contains() { if [[ "$3" == *"$2"* ]]; then ok; else bad "$1: no '$2' in: $3"; fi; }
finish() {
  echo "package_check: $pass passed, $failures failed"
  ((failures == 0))
  exit
}

# --- 1. Build it.
version=$(sed -nE 's/^CMAKE_PROJECT_VERSION:[A-Z]+=(.*)$/\1/p' "$build/CMakeCache.txt")
[[ -n "$version" ]] || { echo "package_check: $build is not a configured build folder" >&2; exit 2; }
arch=$(dpkg --print-architecture)
deb="$build/ddft_${version}_${arch}.deb"
rm -f "$deb"
start=$SECONDS
if ! (cd "$build" && timeout 300 cpack -G DEB > "$work/cpack.log" 2>&1); then
  bad "cpack -G DEB: $(tail -n 20 "$work/cpack.log")"
  finish
fi
[[ -f "$deb" ]] || { bad "cpack made no $deb"; finish; }
echo "package: $(basename "$deb"), $(stat -c %s "$deb") bytes, built in $((SECONDS - start)) s"

# --- 2. Control fields.
field() { dpkg-deb -f "$deb" "$1"; }
expect "Package" ddft "$(field Package)"
expect "Version" "$version" "$(field Version)"
expect "Architecture" "$arch" "$(field Architecture)"
expect "Section" net "$(field Section)"
expect "Priority" optional "$(field Priority)"
name_address='^[^<>@]+ <[^<>@ ]+@[^<>@ ]+>$'
[[ "$(field Maintainer)" =~ $name_address ]] && ok ||
  bad "Maintainer: not 'Name <address>': '$(field Maintainer)'"
contains "Description" "data diode" "$(field Description)"
depends=$(field Depends)
# dpkg-shlibdeps ran (each library the programs link), and the maintainer scripts' tools.
# (libsystemd0: the receiver's sd_notify, for Type=notify and the watchdog.)
for dep in adduser libc6 libstdc++6 libssl3 liburing2 libisal2 libxxhash0 libfmt9 \
  libspdlog libsystemd0; do
  contains "Depends" "$dep" "$depends"
done
expect "Recommends" "python3, logrotate" "$(field Recommends)"
dpkg-deb -I "$deb" > "$work/info"
for script in postinst prerm postrm; do
  grep -qE "^ +[0-9]+ bytes, +[0-9]+ lines +\* +$script +#!/bin/sh" "$work/info" && ok ||
    bad "control: $script missing, not executable or not /bin/sh: $(cat "$work/info")"
done
mkdir -p "$work/control"
dpkg-deb -e "$deb" "$work/control"
expect "conffiles" "/etc/ddft/dd_file_receive.conf /etc/ddft/dd_file_send.conf /etc/logrotate.d/ddft" \
  "$(sort "$work/control/conffiles" | xargs)"

# --- 3. The files: these and no others, owned by root; programs and scripts 0755, the rest 0644.
programs=(dd_file_send dd_file_receive dd_iotest dd_linksim)
scripts=(owlDftsSend dd_file_receive_daemon dd_reconcile dd_resend_request)
expected=(
  "-rw-r--r-- ./etc/ddft/dd_file_receive.conf"
  "-rw-r--r-- ./etc/ddft/dd_file_send.conf"
  "-rw-r--r-- ./etc/logrotate.d/ddft"
  "-rw-r--r-- ./usr/lib/sysctl.d/60-ddft-receive.conf"
  "-rw-r--r-- ./usr/lib/systemd/system/dd_file_receive.service"
  "-rw-r--r-- ./usr/lib/systemd/system/dd_file_send-watch.service"
  "-rw-r--r-- ./usr/share/doc/ddft/README.md"
  "-rw-r--r-- ./usr/share/doc/ddft/SECURITY.md"
  "-rw-r--r-- ./usr/share/doc/ddft/changelog.gz"
  "-rw-r--r-- ./usr/share/doc/ddft/copyright"
  "-rw-r--r-- ./usr/share/ddft/monitoring/ddft-alerts.yml"
  "-rw-r--r-- ./usr/share/ddft/monitoring/ddft-dashboard.json"
)
# Each program and script, and its man page.
for p in "${programs[@]}" "${scripts[@]}"; do
  expected+=("-rwxr-xr-x ./usr/bin/$p" "-rw-r--r-- ./usr/share/man/man1/$p.1.gz")
done
# The documents the README points to: each of the source tree's docs/*.md.
for doc in "$repo"/docs/*.md; do
  expected+=("-rw-r--r-- ./usr/share/doc/ddft/docs/${doc##*/}")
done
# dd_reconcile's Python package: each module of the source tree's, and nothing else.
for module in "$repo"/scripts/ddft_reconcile/*.py; do
  expected+=("-rw-r--r-- ./usr/share/ddft/python/ddft_reconcile/${module##*/}")
done
dpkg-deb -c "$deb" > "$work/contents"
expect "file list (mode and path of each file)" \
  "$(printf '%s\n' "${expected[@]}" | sort)" \
  "$(awk '$1 !~ /^d/ {print $1, $6}' "$work/contents" | sort)"
owners=$(awk '{print $2}' "$work/contents" | sort -u | xargs)
expect "owner of every entry" root/root "$owners"

# --- 4. Unpacked, run from there.
root="$work/root"
dpkg-deb -x "$deb" "$root"
for p in "${programs[@]}"; do
  bin="$root/usr/bin/$p"
  expect "$p --version" "$p $version" "$("$bin" --version 2>&1)"
  out=$("$bin" --help 2>&1)
  expect "$p --help status" 0 "$?"
  contains "$p --help" "Usage:" "$out"
  readelf -d "$bin" | grep -qE '\((RPATH|RUNPATH)\)' && bad "$p has an RPATH or RUNPATH" || ok
  missing=$(ldd "$bin" 2>&1 | grep 'not found')
  [[ -z "$missing" ]] && ok || bad "$p: libraries not found: $missing"
  readelf -S "$bin" | grep -q '\.debug_info' && bad "$p is not stripped" || ok
done
out=$("$root/usr/bin/owlDftsSend" --dry-run /etc/hostname 2>&1)
expect "owlDftsSend --dry-run status" 0 "$?"
contains "owlDftsSend --dry-run runs the dd_file_send beside it" "$root/usr/bin/dd_file_send" "$out"
expect "owlDftsSend --version: that of the dd_file_send beside it" "owlDftsSend $version" \
  "$(OWL_DFTS_CONF=/nonexistent "$root/usr/bin/owlDftsSend" --version 2>&1)"
out=$(DDFT_NICE=0 DDFT_RECEIVE_CONF=/nonexistent "$root/usr/bin/dd_file_receive_daemon" --version 2>&1)
expect "dd_file_receive_daemon runs the dd_file_receive beside it" "dd_file_receive $version" "$out"
out=$("$root/usr/bin/dd_reconcile" --help 2>&1)
expect "dd_reconcile --help status" 0 "$?"
contains "dd_reconcile --help" "SEND_MANIFEST RECEIVE_LOG" "$out"
# Each program's and script's man page: read by man without a warning, with this version. The two
# programs' pages also say what --help has no room for.
if command -v man > /dev/null; then
  for page in "${programs[@]}" "${scripts[@]}"; do
    out=$(MANWIDTH=80 man --warnings -l "$root/usr/share/man/man1/$page.1.gz" 2> "$work/man.err")
    [[ -s "$work/man.err" ]] && bad "man $page: $(cat "$work/man.err")" || ok
    sections=(NAME SYNOPSIS DESCRIPTION "SEE ALSO" "$version")
    [[ $page == dd_file_send || $page == dd_file_receive ]] &&
      sections+=(OPTIONS "EXIT STATUS" SIGNALS FILES EXAMPLES "$page $version")
    for section in "${sections[@]}"; do contains "man $page" "$section" "$out"; done
  done
else
  skip "the man pages: man is not installed (scripts/setup.sh installs man-db)"
fi

# A real transfer over loopback between the unpacked programs.
mkdir -p "$work/src/folder" "$work/out"
head -c 3000000 /dev/urandom > "$work/src/folder/big.bin"
echo "a small one" > "$work/src/folder/small.txt"
port=$((20000 + RANDOM % 30000))
"$root/usr/bin/dd_file_receive" --listen "127.0.0.1:$port" --output "$work/out" --buffer-mb 128 \
  --log-file "$work/rx.log" --quiet &
rx=$!
for _ in $(seq 100); do grep -q "receiving on" "$work/rx.log" 2> /dev/null && break; sleep 0.1; done
if grep -q "receiving on" "$work/rx.log" 2> /dev/null; then
  "$root/usr/bin/dd_file_send" "$work/src/folder" --dest "127.0.0.1:$port" \
    --manifest "$work/sent.jsonl" > "$work/tx.log" 2>&1
  expect "transfer: dd_file_send status" 0 "$?"
  for _ in $(seq 100); do
    (($(grep -c 'B2B Passed' "$work/rx.log") >= 2)) && break
    sleep 0.1
  done
  for f in big.bin small.txt; do
    cmp -s "$work/src/folder/$f" "$work/out/folder/$f" && ok ||
      bad "transfer: folder/$f did not arrive intact: $(cat "$work/rx.log")"
  done
  kill -TERM "$rx"
  wait "$rx"
  expect "transfer: dd_file_receive status after SIGTERM" 0 "$?"
  out=$("$root/usr/bin/dd_reconcile" --json "$work/sent.jsonl" "$work/rx.log" 2>&1)
  expect "transfer: dd_reconcile status" 0 "$?"
  contains "transfer: dd_reconcile counts both files delivered" '"delivered": 2,' "$out"
else
  bad "transfer: the unpacked dd_file_receive did not start: $(cat "$work/rx.log" 2>&1)"
  kill "$rx" 2> /dev/null
  wait "$rx" 2> /dev/null
fi
rx=

# --- 5. The units, as systemd would load them from the package.
if command -v systemd-analyze > /dev/null; then
  for unit in "$root"/usr/lib/systemd/system/*.service; do
    name=$(basename "$unit")
    # ExecStart= must name an existing program: the unpacked one.
    sed "s|/usr/bin/|$root/usr/bin/|g" "$unit" > "$work/$name"
    out=$(MANPATH="$root/usr/share/man" systemd-analyze verify "$work/$name" 2>&1)
    expect "systemd-analyze verify $name: status" 0 "$?"
    [[ -z "$out" ]] && ok || bad "systemd-analyze verify $name printed: $out"
  done
else
  skip "the units: systemd-analyze is missing (scripts/setup.sh installs systemd)"
fi

# --- 6. The logrotate file, for real on a copy: the log folder and the service user replaced.
if command -v logrotate > /dev/null; then
  mkdir -p "$work/logs"
  chmod 750 "$work/logs"
  user=$(id -un) group=$(id -gn)
  sed -e "s|/var/log/ddft|$work/logs|" -e "s/su ddft ddft/su $user $group/" \
    -e "s/create 0640 ddft ddft/create 0640 $user $group/" "$root/etc/logrotate.d/ddft" \
    > "$work/logrotate.conf"
  logrotate --debug -s "$work/logrotate.state" "$work/logrotate.conf" > "$work/logrotate.log" 2>&1
  expect "logrotate --debug status" 0 "$?"
  grep -qiE 'error' "$work/logrotate.log" && bad "logrotate --debug: $(cat "$work/logrotate.log")" ||
    ok
  for n in 1 2; do
    echo "line $n" > "$work/logs/dd_file_receive.log"
    logrotate -f -s "$work/logrotate.state" "$work/logrotate.conf" > "$work/logrotate.log" 2>&1
    expect "logrotate run $n status" 0 "$?"
  done
  expect "logrotate: rotated files (the newest kept uncompressed)" \
    "dd_file_receive.log dd_file_receive.log.1 dd_file_receive.log.2.gz" \
    "$(cd "$work/logs" && ls | sort | xargs)"
  expect "logrotate: the new file's mode" 640 "$(stat -c %a "$work/logs/dd_file_receive.log")"
  expect "logrotate: the oldest file, compressed" "line 1" \
    "$(zcat "$work/logs/dd_file_receive.log.2.gz" 2>&1)"
else
  skip "the logrotate file: logrotate is missing (scripts/setup.sh installs it)"
fi
# The alert rules and the dashboard where the package puts them (tests/scripts/monitoring_test.sh
# checks them in depth: the alerts' unit tests, the metric names against a real run).
monitoring="$root/usr/share/ddft/monitoring"
if command -v promtool > /dev/null; then
  out=$(promtool check rules "$monitoring/ddft-alerts.yml" 2>&1)
  expect "promtool check rules ddft-alerts.yml: status" 0 "$?"
  contains "promtool check rules ddft-alerts.yml" "SUCCESS" "$out"
else
  skip "the alert rules: promtool is missing (scripts/setup.sh installs prometheus)"
fi
out=$(python3 -m json.tool "$monitoring/ddft-dashboard.json" 2>&1 > /dev/null)
expect "ddft-dashboard.json is JSON" "" "$out"

# --- 7. The maintainer scripts.
for script in postinst prerm postrm; do
  out=$(sh -n "$work/control/$script" 2>&1)
  expect "sh -n $script" "" "$out"
done
if [[ $(id -u) -ne 0 ]]; then
  skip "installing the package: needs root (in a private mount namespace, nothing is changed)"
elif ! unshare --mount true 2> /dev/null; then
  skip "installing the package: no private mount namespace here (unshare --mount is refused)"
else
  timeout 300 unshare --mount --propagation private bash "$self" --install-test "$deb" "$work" \
    > "$work/install.log" 2>&1
  status=$?
  if ((status == 77)); then
    skip "installing the package: $(grep SKIP "$work/install.log" ||
      echo "no private mount namespace with overlays here")"
  else
    echo "installed, reinstalled, removed and purged for real (status $status):" \
      "$(grep -c '^PASS' "$work/install.log") checks passed"
    while read -r verdict rest; do
      case "$verdict" in
        PASS) ok ;;
        FAIL) bad "$rest" ;;
      esac
    done < "$work/install.log"
    grep -qE '^(PASS|FAIL) ' "$work/install.log" ||
      bad "installing the package: no result (status $status): $(cat "$work/install.log")"
  fi
fi

# --- 8. lintian, Debian's own package checker: no error and no warning (a tag that must stay is
# overridden in the package, /usr/share/lintian/overrides/ddft, with its reason). Then a copy
# broken on purpose (no copyright file: an error; a man page left out: a warning) proves that the
# check fails on both.
# lintian_tags DEB: lintian's E: and W: lines. Its status goes to $work/lintian.status: 0 clean,
# 2 an error or a warning (--fail-on), 1 lintian itself failed.
lintian_tags() {
  lintian --no-cfg --fail-on error,warning --tag-display-limit 0 "$1" > "$work/lintian.out" \
    2> "$work/lintian.err"
  echo $? > "$work/lintian.status"
  # (Run as root, as CI does, it says it would rather not be: that line is no finding.)
  sed -i '/^running with root privileges is not recommended!$/d' "$work/lintian.err"
  grep -E '^[EW]: ' "$work/lintian.out"
}
if command -v lintian > /dev/null; then
  tags=$(lintian_tags "$deb")
  status=$(cat "$work/lintian.status")
  if ((status == 0)) && [[ -z "$tags" ]]; then ok; else
    bad "lintian (status $status): $(cat "$work/lintian.out" "$work/lintian.err")"
  fi
  broken="$work/broken"
  dpkg-deb -R "$deb" "$broken"
  rm "$broken/usr/share/doc/ddft/copyright" "$broken/usr/share/man/man1/dd_iotest.1.gz"
  sed -i -e '\| usr/share/doc/ddft/copyright$|d' -e '\| usr/share/man/man1/dd_iotest.1.gz$|d' \
    "$broken/DEBIAN/md5sums"
  dpkg-deb -b "$broken" "$work/broken.deb" > /dev/null
  tags=$(lintian_tags "$work/broken.deb")
  expect "lintian on a broken copy: status" 2 "$(cat "$work/lintian.status")"
  contains "lintian on a broken copy: the error" "E: ddft: no-copyright-file" "$tags"
  contains "lintian on a broken copy: the warning" \
    "W: ddft: no-manual-page [usr/bin/dd_iotest]" "$tags"
else
  skip "lintian: it is not installed (scripts/setup.sh installs it)"
fi

finish
