#!/usr/bin/env bash
# Dependencies run one way: common/ includes and links nothing of ours; sender/, receiver/,
# iotest/ and linksim/ include and link common/ and not one another. The one exception is a
# program's main.cpp, which may embed the disk self-test (dd_file_send --test-read-io,
# dd_file_receive --test-io): it may include iotest/cli.hpp, and its executable link ddft::iotest.
# The check is run first on a planted tree that breaks each rule, so that it is known to fail.
# Usage: layers_test.sh SOURCE_ROOT
set -u
root=${1:?usage: layers_test.sh SOURCE_ROOT}
sides="sender receiver iotest linksim"

# Prints one line per include that crosses a layer in the tree at $1; returns 1 when any does.
check_includes() {
  local tree=$1 bad=0 dir file inc target
  for dir in common $sides; do
    [ -d "$tree/$dir" ] || continue
    while IFS= read -r file; do
      while IFS= read -r inc; do
        target=${inc%%/*}
        case " $sides " in *" $target "*) ;; *) continue ;; esac
        [ "$target" = "$dir" ] && continue
        if [ "$dir" != common ] && [ "${file##*/}" = main.cpp ] && [ "$inc" = iotest/cli.hpp ]; then
          continue
        fi
        echo "layers: ${file#"$tree"/} includes \"$inc\": $dir/ must not depend on $target/"
        bad=1
      done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*["<]\([^">]*\)[">].*/\1/p' "$file")
    done < <(find "$tree/$dir" -type f \( -name '*.hpp' -o -name '*.cpp' -o -name '*.h' -o -name '*.in' \))
  done
  return $bad
}

# Prints one line per target_link_libraries() of a library that names another of our libraries;
# returns 1 when any does. Executables (dd_*) may link ddft::iotest besides their own library.
check_links() {
  local tree=$1 bad=0 dir call target lib
  for dir in common $sides; do
    [ -f "$tree/$dir/CMakeLists.txt" ] || continue
    # One target_link_libraries(...) call per line, comments dropped.
    while IFS= read -r call; do
      target=$(sed -n 's/^target_link_libraries([[:space:]]*\([A-Za-z0-9_]*\).*/\1/p' <<<"$call")
      for lib in $(grep -o 'ddft::[a-z]*\|ddft_[a-z]*' <<<"${call#*"$target"}" | sed 's/ddft::/ddft_/'); do
        [ "$lib" = ddft_common ] && continue
        [ "$lib" = "ddft_$dir" ] && [ "$target" != "ddft_$dir" ] && continue
        [ "$lib" = ddft_iotest ] && [ "${target#dd_}" != "$target" ] && continue
        echo "layers: $dir/CMakeLists.txt: $target links $lib"
        bad=1
      done
    done < <(sed 's/#.*//' "$tree/$dir/CMakeLists.txt" | tr '\n' ' ' |
             grep -o 'target_link_libraries([^)]*)')
  done
  return $bad
}

# The planted tree: every rule broken once. Each must be reported.
plant=$(mktemp -d /tmp/ddft_layers.XXXXXX)
trap 'rm -rf "$plant"' EXIT
mkdir -p "$plant"/{common,sender,receiver,iotest,linksim}
echo '#include "sender/pipeline.hpp"' > "$plant/common/a.hpp"
echo '#include "sender/reader.hpp"' > "$plant/iotest/disk.cpp"
echo '#include <receiver/config.hpp>' > "$plant/linksim/x.cpp"
echo '#include "iotest/cli.hpp"' > "$plant/receiver/main.cpp"
echo '  #  include "common/fd.hpp"' > "$plant/sender/ok.cpp"
printf 'target_link_libraries(ddft_iotest PUBLIC\n  ddft::sender)\n' > "$plant/iotest/CMakeLists.txt"
printf 'target_link_libraries(ddft_linksim PUBLIC ddft::common)\ntarget_link_libraries(dd_linksim PRIVATE ddft::linksim ddft::sender)\n' > "$plant/linksim/CMakeLists.txt"
printf 'target_link_libraries(dd_file_receive PRIVATE ddft::receiver ddft::iotest)\n' > "$plant/receiver/CMakeLists.txt"
planted=$( { check_includes "$plant"; check_links "$plant"; } 2>&1)
expected=(
  "common/a.hpp includes \"sender/pipeline.hpp\""
  "iotest/disk.cpp includes \"sender/reader.hpp\""
  "linksim/x.cpp includes \"receiver/config.hpp\""
  "iotest/CMakeLists.txt: ddft_iotest links ddft_sender"
  "linksim/CMakeLists.txt: dd_linksim links ddft_sender"
)
fails=0
for e in "${expected[@]}"; do
  if ! grep -qF "$e" <<<"$planted"; then
    echo "FAIL the check misses a planted break: $e"
    fails=$((fails + 1))
  fi
done
if [ "$(grep -c . <<<"$planted")" -ne "${#expected[@]}" ]; then
  echo "FAIL the check reports what is allowed:"
  echo "$planted"
  fails=$((fails + 1))
fi

# The real tree.
check_includes "$root" || fails=$((fails + 1))
check_links "$root" || fails=$((fails + 1))
if [ "$fails" -eq 0 ]; then echo "ok   dependencies run one way"; fi
exit $((fails > 0))
