#!/usr/bin/env bash
# Dependencies run one way: common/ includes and links nothing of ours; sender/, receiver/,
# iotest/ and linksim/ include and link common/ and not one another. The one exception is a
# program's main.cpp, which may embed the disk self-test (dd_file_send --test-read-io,
# dd_file_receive --test-io): it may include iotest/cli.hpp, and its executable link ddft::iotest.
#
# Inside sender/ and receiver/, the stage folders run one way too (STAGES below: a stage may
# include the stages before it and the program's top level, never one after it).
#
# What is checked:
# - every #include, #include_next and __has_include of a layer's C and C++ files, "..." and <...>
#   alike: named by its path from the source root, it must not name another layer; a path with
#   "..", an absolute path and a computed include (#include MACRO) are refused whatever they
#   reach, since they bypass that naming;
# - no symbolic link in a layer's folder leads out of it;
# - every call in the CMake files (the layers', and those elsewhere that act on a layer's target:
#   target_*(), set_target_properties(), set_property(TARGET), add_dependencies()): a call belongs
#   to the layer of the target it acts on, else to the layer whose folder holds it. It must not
#   name another layer's library (ddft_X or ddft::X, in generator expressions too), nor a path
#   into another layer's folder (sources, include folders, globs, subdirectories, modules),
#   relative to the file's folder or through ${PROJECT_SOURCE_DIR} and the like.
# Usage: layers_test.sh SOURCE_ROOT            checks the tree
#        layers_test.sh --planted SOURCE_ROOT  checks a copy of the tree, clean, then with each of
#                                              the planted breaks below, every one of which must
#                                              be reported, and alone
set -u
planted=no
if [[ ${1:-} == --planted ]]; then
  planted=yes
  shift
fi
root=$(realpath "${1:?usage: layers_test.sh [--planted] SOURCE_ROOT}")

# check TREE: prints one line per break in TREE; returns 1 when there is any.
check() {
  python3 - "$1" << 'PY'
import os
import re
import sys

tree = sys.argv[1]
LAYERS = ("common", "sender", "receiver", "iotest", "linksim")
# Each program's stage folders, in the one order their includes may run: a stage includes its
# own folder, the stages before it and the program's top level (settings, counters, the types
# the stages hand each other), never a stage after it nor the pipeline that wires them; the last
# stage, operations, watches the running pipeline and may include it.
STAGES = {"receiver": ("delivery", "link", "assembly", "operations"),
          "sender": ("source", "read", "transmit", "operations")}
SOURCE_SUFFIXES = (".hpp", ".cpp", ".h", ".c", ".cc", ".cxx", ".hh", ".hxx", ".ipp", ".inc",
                   ".tpp", ".in")
INCLUDE = re.compile(r"^\s*#\s*include(?:_next)?\b\s*(.*)$")
HAS_INCLUDE = re.compile(r"__has_include(?:_next)?\s*\(\s*([^)]*)\)")
LIBRARY = re.compile(r"(?<![A-Za-z0-9_])ddft(?:::|_)(" + "|".join(LAYERS) + r")(?![A-Za-z0-9_])")
ROOT_VARS = ("PROJECT_SOURCE_DIR", "CMAKE_SOURCE_DIR", "ddft_SOURCE_DIR", "CMAKE_HOME_DIRECTORY")
HERE_VARS = ("CMAKE_CURRENT_SOURCE_DIR", "CMAKE_CURRENT_LIST_DIR")
breaks = []


def layer_of(path):
    """The layer whose folder holds PATH (absolute), or None."""
    rel = os.path.relpath(os.path.normpath(path), tree)
    first = rel.split(os.sep)[0]
    return first if first in LAYERS and not rel.startswith("..") else None


def stage_of(layer, path):
    """The stage folder PATH (from the source root) lies in, "" for the program's top level."""
    parts = path.split("/")
    return parts[1] if len(parts) > 2 else ""


def stage_break(rel, layer, inc):
    """What is wrong with REL including INC of its own layer, or None."""
    order = STAGES.get(layer)
    if order is None:
        return None
    here, there = stage_of(layer, rel), stage_of(layer, inc)
    for stage in (here, there):
        if stage and stage not in order:
            return (f'includes "{inc}": {layer}/{stage}/ is not a stage of {layer}/ '
                    f"({', '.join(order)})")
    if here and here != order[-1] and inc == f"{layer}/pipeline.hpp":
        return f'includes "{inc}": a stage must not depend on the program that wires it'
    if here and there and order.index(there) > order.index(here):
        return (f'includes "{inc}": {layer}/{here}/ must not depend on {layer}/{there}/, which '
                f"comes after it ({', '.join(order)})")
    return None


def include_break(rel, layer, operand):
    """What is wrong with including OPERAND (the text after #include) from REL, or None."""
    m = re.match(r'"([^"]*)"|<([^>]*)>', operand.strip())
    if not m:
        return f"includes {operand.strip()}: a computed include, which this check cannot follow"
    inc = m[1] if m[1] is not None else m[2]
    if os.path.isabs(inc):
        return f'includes "{inc}": an absolute path; name it by its path from the source root'
    if ".." in inc.split("/"):
        # "..." is looked for beside the file first, then (as <...>) from the source root.
        beside = os.path.normpath(os.path.join(tree, os.path.dirname(rel), inc))
        found = beside if m[1] is not None and os.path.exists(beside) else None
        reached = os.path.relpath(found or os.path.normpath(os.path.join(tree, inc)), tree)
        return (f'includes "{inc}": a path with ".." (it reaches {reached}); name it by its '
                "path from the source root")
    target = inc.split("/")[0]
    if target == layer:
        return stage_break(rel, layer, inc)
    if target not in LAYERS or target == "common":
        return None
    # The two programs embed the disk self-test: their main.cpp alone may include its command line.
    if rel in ("sender/main.cpp", "receiver/main.cpp") and inc == "iotest/cli.hpp":
        return None
    return f'includes "{inc}": {layer}/ must not depend on {target}/'


def check_sources(layer):
    top = os.path.join(tree, layer)
    for dirpath, dirs, files in os.walk(top):
        dirs.sort()
        for name in sorted(dirs + files):
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, tree)
            if os.path.islink(full) and layer_of(os.path.realpath(full)) != layer:
                breaks.append(f"{rel} is a symbolic link to {os.readlink(full)}, out of {layer}/")
                continue
            if name not in files or not name.endswith(SOURCE_SUFFIXES) or os.path.islink(full):
                continue
            with open(full, encoding="utf-8", errors="replace") as f:
                for line in f:
                    m = INCLUDE.match(line)
                    operands = [m[1]] if m else []
                    operands += HAS_INCLUDE.findall(line) if "__has_include" in line else []
                    for operand in operands:
                        why = include_break(rel, layer, operand)
                        if why:
                            breaks.append(f"{rel} {why}")


def cmake_calls(text):
    """Yields (command, [arguments]) for every command call, comments left out."""
    text = re.sub(r'#\[(=*)\[.*?\]\1\]|#[^\n]*|("(?:\\.|[^"\\])*")', lambda m: m[2] or " ", text,
                  flags=re.S)
    for m in re.finditer(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*\(", text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            if text[i] == '"':
                i = text.index('"', i + 1) if '"' in text[i + 1:] else len(text)
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        args = re.findall(r'"(?:\\.|[^"\\])*"|[^\s()"]+', text[m.end():i - 1])
        yield m[1].lower(), [a[1:-1] if a.startswith('"') else a for a in args]


def cmake_files():
    for dirpath, dirs, files in os.walk(tree):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "build")))
        for name in sorted(files):
            if name == "CMakeLists.txt" or name.endswith(".cmake"):
                yield os.path.join(dirpath, name)


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def subject_of(command, args):
    """The target a call acts on, or None."""
    if args and (command.startswith("target_") or
                 command in ("add_dependencies", "set_target_properties")):
        return args[0]
    if command == "set_property" and "TARGET" in args[:-1]:
        return args[args.index("TARGET") + 1]
    return None


def paths_in(arg, here):
    """The absolute paths ARG may name (variables for the source folders substituted; pieces
    holding any other variable left out)."""
    for var in ROOT_VARS:
        arg = arg.replace("${" + var + "}", tree)
    for var in HERE_VARS:
        arg = arg.replace("${" + var + "}", here)
    for piece in re.split(r"[;,<>]|\$<[A-Za-z_]*:", arg):
        if piece and "${" not in piece and "$<" not in piece:
            yield os.path.normpath(os.path.join(here, piece))


def check_cmake(targets):
    for path in cmake_files():
        here = os.path.dirname(path)
        rel = os.path.relpath(path, tree)
        for command, args in cmake_calls(read(path)):
            subject = subject_of(command, args)
            owner = targets.get(subject) or layer_of(here)
            if owner is None:
                continue
            call = f"{command}({' '.join(args[:1])} ...)"
            for arg in args:
                for lib in LIBRARY.findall(arg):
                    exe_self_test = (lib == "iotest" and command == "target_link_libraries"
                                     and subject in ("dd_file_send", "dd_file_receive"))
                    if lib not in ("common", owner) and not exe_self_test:
                        breaks.append(f"{rel}: {call} names ddft_{lib}: {owner}/ must not depend "
                                      f"on {lib}/")
                for p in paths_in(arg, here):
                    reached = layer_of(p)
                    if reached not in (None, owner):
                        breaks.append(f"{rel}: {call} names {arg}, in {reached}/: {owner}/ "
                                      f"must not depend on {reached}/")


def layer_targets():
    """Each target a layer's CMakeLists.txt makes (and its ALIAS) -> that layer."""
    targets = {}
    for layer in LAYERS:
        path = os.path.join(tree, layer, "CMakeLists.txt")
        if os.path.isfile(path):
            for command, args in cmake_calls(read(path)):
                if command in ("add_library", "add_executable") and args:
                    targets[args[0]] = layer
    return targets


for layer in LAYERS:
    check_sources(layer)
check_cmake(layer_targets())
for b in breaks:
    print(f"layers: {b}")
sys.exit(1 if breaks else 0)
PY
}

fails=0
fail() {
  echo "FAIL $*"
  fails=$((fails + 1))
}

if [[ $planted == no ]]; then
  check "$root" && echo "ok   dependencies run one way"
  exit
fi

# A copy of what the check reads: the layers and every CMake file.
base=$(mktemp -d /tmp/ddft_layers.XXXXXX)
trap 'rm -rf "$base"' EXIT
copy=$base/tree
mkdir -p "$copy"
(cd "$root" && cp -r common sender receiver iotest linksim "$copy/" &&
  find . -mindepth 1 \( -name 'build*' -o -name '.*' \) -prune -o \
    \( -name CMakeLists.txt -o -name '*.cmake' \) -type f -print |
  while read -r f; do mkdir -p "$copy/$(dirname "$f")" && cp "$f" "$copy/$f"; done)
out=$(check "$copy")
if [[ $? -ne 0 ]]; then fail "the copy of the tree is not clean to begin with: $out"; fi

# Each case: NAME|FILE|LINE TO APPEND|what the report must say. Each is planted alone in the copy
# (a file appended to, or made, then put back), where it must be reported, and alone. @ROOT@
# stands for the copy's absolute path.
cases=(
  'include|common/a.hpp|#include "sender/pipeline.hpp"|common/a.hpp includes "sender/pipeline.hpp": common/ must not depend on sender/'
  'include from a side|iotest/disk.cpp|#include "sender/read/reader.hpp"|iotest/disk.cpp includes "sender/read/reader.hpp": iotest/ must not depend on sender/'
  'angle include|linksim/x.cpp|#include <receiver/config.hpp>|linksim/x.cpp includes "receiver/config.hpp": linksim/ must not depend on receiver/'
  'relative include|sender/x.cpp|#include "../receiver/config.hpp"|sender/x.cpp includes "../receiver/config.hpp": a path with ".." (it reaches receiver/config.hpp)'
  'relative include below|common/x.hpp|  #  include "../sender/pipeline.hpp"|common/x.hpp includes "../sender/pipeline.hpp": a path with ".." (it reaches sender/pipeline.hpp)'
  '.. inside a path|sender/y.cpp|#include "common/../receiver/config.hpp"|sender/y.cpp includes "common/../receiver/config.hpp": a path with ".." (it reaches receiver/config.hpp)'
  'absolute include|receiver/z.cpp|#include "@ROOT@/sender/reader.hpp"|includes "@ROOT@/sender/reader.hpp": an absolute path'
  'include_next|iotest/n.cpp|#include_next <linksim/link_model.hpp>|iotest/n.cpp includes "linksim/link_model.hpp": iotest/ must not depend on linksim/'
  'computed include|sender/m.cpp|#include DDFT_RECEIVER_HEADER|sender/m.cpp includes DDFT_RECEIVER_HEADER: a computed include'
  '__has_include|sender/h.cpp|#if __has_include("receiver/config.hpp")|sender/h.cpp includes "receiver/config.hpp": sender/ must not depend on receiver/'
  'main.cpp in common|common/main.cpp|#include "iotest/cli.hpp"|common/main.cpp includes "iotest/cli.hpp": common/ must not depend on iotest/'
  'library link|iotest/CMakeLists.txt|target_link_libraries(ddft_iotest PUBLIC ddft::sender)|iotest/CMakeLists.txt: target_link_libraries(ddft_iotest ...) names ddft_sender: iotest/ must not depend on sender/'
  'executable link|linksim/CMakeLists.txt|target_link_libraries(dd_linksim PRIVATE ddft_receiver)|linksim/CMakeLists.txt: target_link_libraries(dd_linksim ...) names ddft_receiver: linksim/ must not depend on receiver/'
  'target_sources|iotest/CMakeLists.txt|target_sources(ddft_iotest PRIVATE ../sender/reader.cpp)|iotest/CMakeLists.txt: target_sources(ddft_iotest ...) names ../sender/reader.cpp, in sender/'
  'add_library|common/CMakeLists.txt|add_library(ddft_common_extra STATIC ${PROJECT_SOURCE_DIR}/receiver/file.cpp)|common/CMakeLists.txt: add_library(ddft_common_extra ...) names ${PROJECT_SOURCE_DIR}/receiver/file.cpp, in receiver/'
  'include directory|receiver/CMakeLists.txt|target_include_directories(ddft_receiver PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/../sender)|receiver/CMakeLists.txt: target_include_directories(ddft_receiver ...) names ${CMAKE_CURRENT_SOURCE_DIR}/../sender, in sender/'
  'include directory in a generator expression|linksim/CMakeLists.txt|target_include_directories(ddft_linksim PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/iotest>)|in iotest/: linksim/ must not depend on iotest/'
  'object library|sender/CMakeLists.txt|target_sources(ddft_sender PRIVATE $<TARGET_OBJECTS:ddft_receiver>)|sender/CMakeLists.txt: target_sources(ddft_sender ...) names ddft_receiver: sender/ must not depend on receiver/'
  'glob|sender/CMakeLists.txt|file(GLOB receiver_sources ${PROJECT_SOURCE_DIR}/receiver/*.cpp)|sender/CMakeLists.txt: file(GLOB ...) names ${PROJECT_SOURCE_DIR}/receiver/*.cpp, in receiver/'
  'subdirectory|linksim/CMakeLists.txt|add_subdirectory(../iotest iotest_again)|linksim/CMakeLists.txt: add_subdirectory(../iotest ...) names ../iotest, in iotest/'
  'a layer target from the top|CMakeLists.txt|target_sources(ddft_common PRIVATE sender/read/reader.cpp)|CMakeLists.txt: target_sources(ddft_common ...) names sender/read/reader.cpp, in sender/: common/ must not depend on sender/'
  'an executable from the top|CMakeLists.txt|target_link_libraries(dd_file_send PRIVATE ddft::receiver)|CMakeLists.txt: target_link_libraries(dd_file_send ...) names ddft_receiver: sender/ must not depend on receiver/'
  'a layer target from the tests|tests/CMakeLists.txt|set_property(TARGET ddft_iotest APPEND PROPERTY SOURCES ${PROJECT_SOURCE_DIR}/linksim/link_model.cpp)|tests/CMakeLists.txt: set_property(TARGET ...) names ${PROJECT_SOURCE_DIR}/linksim/link_model.cpp, in linksim/: iotest/ must not depend on linksim/'
  'symbolic link|sender/rx|->../receiver|sender/rx is a symbolic link to ../receiver, out of sender/'
  'a later stage|receiver/delivery/x.cpp|#include "receiver/assembly/file.hpp"|receiver/delivery/x.cpp includes "receiver/assembly/file.hpp": receiver/delivery/ must not depend on receiver/assembly/, which comes after it'
  'a later stage of the sender|sender/source/x.hpp|#include <sender/transmit/pacer.hpp>|sender/source/x.hpp includes "sender/transmit/pacer.hpp": sender/source/ must not depend on sender/transmit/'
  'the pipeline from a stage|sender/read/x.cpp|#include "sender/pipeline.hpp"|sender/read/x.cpp includes "sender/pipeline.hpp": a stage must not depend on the program that wires it'
  'a folder that is no stage|receiver/misc/x.cpp|#include "receiver/counters.hpp"|receiver/misc/x.cpp includes "receiver/counters.hpp": receiver/misc/ is not a stage of receiver/'
)
for c in "${cases[@]}"; do
  IFS='|' read -r name file line want <<< "$c"
  target=$copy/$file
  existed=no made_dir=
  if [[ ! -d $(dirname "$target") ]]; then
    made_dir=$(dirname "$target")
    mkdir -p "$made_dir"
  fi
  if [[ -e $target ]]; then
    existed=yes
    cp -p "$target" "$base/original"
  fi
  if [[ $line == '->'* ]]; then
    ln -s "${line#->}" "$target"
  else
    echo "${line//@ROOT@/$copy}" >> "$target"
  fi
  want=${want//@ROOT@/$copy}
  out=$(check "$copy")
  status=$?
  if [[ $status -ne 1 ]] || ! grep -qF "$want" <<< "$out"; then
    fail "$name ($file) not reported (status $status): want \"$want\" in: $out"
  elif [[ $(grep -c . <<< "$out") -ne 1 ]]; then
    fail "$name ($file) reported with more: $out"
  fi
  rm -f "$target"
  if [[ $existed == yes ]]; then mv "$base/original" "$target"; fi
  if [[ -n $made_dir ]]; then rmdir "$made_dir"; fi
done
if [[ $fails -eq 0 ]]; then echo "ok   each of ${#cases[@]} planted breaks reported, alone"; fi
exit $((fails > 0))
