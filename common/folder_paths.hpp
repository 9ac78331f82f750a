// Comparing folders by their paths: whether one is another or below it, as the checks that keep
// two folders apart need (a hot folder and where its sent files go, two channels' folders, the
// receiver's output, failed and channel folders). Pure; nothing here throws.
#pragma once

#include <string_view>

namespace ddft::common {

// Whether `path` is the folder `root` or below it. Both absolute and normal (canonical, or made
// so lexically), without a trailing '/' but for "/" itself.
inline bool at_or_below(std::string_view path, std::string_view root) {
  if (path == root) return true;
  if (root == "/") return path.starts_with('/');
  return path.size() > root.size() && path.starts_with(root) && path[root.size()] == '/';
}

}  // namespace ddft::common
