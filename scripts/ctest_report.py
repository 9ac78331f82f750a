#!/usr/bin/env python3
"""Reads the JUnit file of a ctest run and says what did not run, and why.

    ctest_report.py JUNIT_XML --required tests/required_tests.txt [--listing CTEST_N_OUTPUT]

Prints every skipped test with its reason, then checks the required list: a required test that
was skipped on a host having every capability its line needs fails the run; one the host cannot
run is named on a NOT TESTED line; a line matching no test fails (of the whole suite as
`ctest -N` lists it, given with --listing, where the run left some out on purpose; of the run
otherwise). Exit status 0 when nothing required was missed, 1 otherwise.

The capabilities are probed here, directly (a system call, a mount, a socket), never through a
ddft program: a product that fails on a capable host must fail its test, not skip it.
"""

import argparse
import ctypes
import fcntl
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

F_SETLEASE = 1024
SYS_IO_URING_SETUP = 425  # the same on x86-64, arm64 and every architecture of the newer table


def run_quietly(args):
    """Runs args: its standard output alone in .stdout, its errors (or the failure to run it) in
    .stderr."""
    try:
        return subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return subprocess.CompletedProcess(args, 1, "", str(e))


def probe_root():
    return None if os.geteuid() == 0 else "not root"


def probe_mount():
    if os.geteuid() != 0:
        return "not root"
    with tempfile.TemporaryDirectory() as where:
        r = run_quietly(["unshare", "--mount", "mount", "-t", "tmpfs", "-o", "size=1m", "none",
                         where])
        return None if r.returncode == 0 else "no tmpfs mounts here: " + r.stderr.strip()


def probe_loop():
    if os.geteuid() != 0:
        return "not root"
    with tempfile.NamedTemporaryFile(dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as f:
        f.truncate(1 << 20)
        f.flush()
        r = run_quietly(["losetup", "--find", "--show", f.name])
        if r.returncode != 0:
            return "no loop device attaches: " + r.stderr.strip()
        run_quietly(["losetup", "-d", r.stdout.strip()])
    return None


def probe_nbd():
    missing = [t for t in ("nbdkit", "nbdfuse", "fusermount3") if shutil.which(t) is None]
    if missing:
        return "not installed: " + ", ".join(missing)
    try:
        os.close(os.open("/dev/fuse", os.O_RDWR))
    except OSError as e:
        return f"/dev/fuse: {e.strerror}"
    return None


def probe_io_uring():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    params = ctypes.create_string_buffer(120)  # struct io_uring_params, zeroed
    fd = libc.syscall(ctypes.c_long(SYS_IO_URING_SETUP), ctypes.c_uint(4), params)
    if fd < 0:
        return "io_uring_setup: " + os.strerror(ctypes.get_errno())
    os.close(fd)
    return None


def probe_lease():
    # A read lease is granted only while no one has the file open for writing.
    writer, name = tempfile.mkstemp()
    os.close(writer)
    fd = os.open(name, os.O_RDONLY)
    try:
        fcntl.fcntl(fd, F_SETLEASE, fcntl.F_RDLCK)
        fcntl.fcntl(fd, F_SETLEASE, fcntl.F_UNLCK)
    except OSError as e:
        return f"F_SETLEASE in {tempfile.gettempdir()}: {e.strerror}"
    finally:
        os.close(fd)
        os.unlink(name)
    return None


def probe_ipv6():
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as s:
            s.bind(("::1", 0))
    except OSError as e:
        return f"cannot bind ::1: {e.strerror}"
    return None


def probe_systemd():
    missing = [t for t in ("/lib/systemd/systemd", "systemd-analyze") if shutil.which(t) is None]
    if missing:
        return "not installed: " + ", ".join(missing)
    with open("/proc/1/comm", encoding="utf-8") as f:
        if f.read().strip() == "systemd":
            return None
    why = probe_mount()
    return None if why is None else "PID 1 is not systemd and no user manager can run: " + why


def probe_promtool():
    missing = [t for t in ("promtool", "logrotate") if shutil.which(t) is None]
    return "not installed: " + ", ".join(missing) if missing else None


PROBES = {"root": probe_root, "mount": probe_mount, "loop": probe_loop, "nbd": probe_nbd,
          "io_uring": probe_io_uring, "lease": probe_lease, "ipv6": probe_ipv6,
          "systemd": probe_systemd, "promtool": probe_promtool}


def read_required(path):
    """[(needs, regex text, compiled)] from the required list; exits 2 on a bad line."""
    entries = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            fields = line.split()
            needs = [] if fields[0] == "-" else fields[0].split(",")
            unknown = [n for n in needs if n not in PROBES]
            if len(fields) != 2 or unknown:
                sys.exit(f"ctest_report: {path}:{number}: expected 'NEEDS REGEX' with NEEDS "
                         f"among {', '.join(PROBES)} or -, got '{line}'")
            try:
                entries.append((needs, fields[1], re.compile(fields[1])))
            except re.error as e:
                sys.exit(f"ctest_report: {path}:{number}: bad regular expression: {e}")
    return entries


def skip_lines(case):
    """A script's own SKIP and SKIPPED lines, each once, in order."""
    out = case.findtext("system-out") or ""
    said = [l.strip() for l in out.splitlines() if re.match(r"(SKIPPED|SKIP)\b", l.strip())]
    return list(dict.fromkeys(said))


def skip_reason(case):
    """The reason a skipped test gave: GoogleTest's message (every line between its "Skipped" and
    its "[  SKIPPED ]" line), a script's SKIPPED/SKIP lines, or ctest's own."""
    lines = (case.findtext("system-out") or "").splitlines()
    for i, l in enumerate(lines):
        if l.endswith(": Skipped") or l.strip() == "Skipped":
            said = []
            for x in lines[i + 1:]:
                if x.startswith("[  SKIPPED ]"):
                    break
                if x.strip():
                    said.append(x.strip())
            return " ".join(said) or "no reason given"
    said = skip_lines(case)
    if said:
        return "; ".join(said)
    skipped = case.find("skipped")
    return skipped.get("message", "no reason given") if skipped is not None else "no reason given"


def read_results(path):
    """{test name: (status, skip reason or None)} from ctest's JUnit file."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        sys.exit(f"ctest_report: cannot read the ctest results '{path}': {e}")
    results = {}
    for case in root.iter("testcase"):
        status = case.get("status", "")
        if status in ("notrun", "disabled"):
            reason = skip_reason(case)
        else:  # a test that ran may still have skipped a part of itself: its SKIP lines say so
            reason = "; ".join(skip_lines(case)) or None
        results[case.get("name")] = (status, reason)
    return results


def read_listing(path):
    """The test names of `ctest -N` output ("  Test #12: name")."""
    try:
        with open(path, encoding="utf-8") as f:
            return [m.group(1) for m in re.finditer(r"Test\s+#\d+: (\S+)", f.read())]
    except OSError as e:
        sys.exit(f"ctest_report: cannot read the test listing '{path}': {e.strerror}")


def check_required(entries, results, suite):
    """Prints the verdict on each required line; returns the number of failures."""
    failures = 0
    probed = {}
    for needs, text, pattern in entries:
        if not any(pattern.search(n) for n in suite):
            print(f"ctest_report: FAIL: the required '{text}' matches no test of the suite")
            failures += 1
            continue
        names = [n for n in results if pattern.search(n)]
        skipped = [n for n in names if results[n][0] in ("notrun", "disabled")]
        if not skipped:
            continue
        missing = {}
        for need in needs:
            if need not in probed:
                probed[need] = PROBES[need]()
            if probed[need] is not None:
                missing[need] = probed[need]
        for name in skipped:
            if missing:
                lacks = "; ".join(f"{k}: {v}" for k, v in missing.items())
                print(f"ctest_report: NOT TESTED on this host: {name} (needs {lacks})")
            else:
                print(f"ctest_report: FAIL: required test {name} was skipped on a host that can "
                      f"run it (needs {','.join(needs) or 'nothing'}): {results[name][1]}")
                failures += 1
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("junit")
    parser.add_argument("--required", required=True)
    parser.add_argument("--listing", help="`ctest -N` output: every test of the suite")
    args = parser.parse_args()
    entries = read_required(args.required)
    results = read_results(args.junit)
    suite = read_listing(args.listing) if args.listing else list(results)
    counts = {}
    for status, _ in results.values():
        counts[status] = counts.get(status, 0) + 1
    print(f"ctest_report: {len(results)} tests: {counts.get('run', 0)} passed, "
          f"{counts.get('fail', 0)} failed, "
          f"{counts.get('notrun', 0) + counts.get('disabled', 0)} skipped")
    for name, (status, reason) in sorted(results.items()):
        if status in ("notrun", "disabled"):
            print(f"ctest_report: skipped: {name}: {reason}")
        elif reason:
            print(f"ctest_report: partly skipped: {name}: {reason}")
    failures = check_required(entries, results, suite)
    if failures:
        print(f"ctest_report: {failures} required test(s) missed: see the FAIL lines above")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
