// Test helper: replays what a program wrote to a terminal and returns the rows left on the
// screen, for the few controls the progress display uses: '\r', '\n', ESC[K (erase to the end of
// the row), ESC[A (up one row), ESC[?7l / ESC[?7h (autowrap off / on; rows are unbounded here,
// so they change nothing). Any other escape sequence is an error: the display must not emit
// what this does not know. A byte is one column (the tests' names are ASCII).
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ddft::testing {

inline std::vector<std::string> replay_terminal(std::string_view out) {
  std::vector<std::string> rows(1);
  size_t row = 0;
  size_t col = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    const char c = out[i];
    if (c == '\r') {
      col = 0;
    } else if (c == '\n') {
      // As a terminal with ONLCR (the default) shows it: the start of the next row.
      ++row;
      col = 0;
      if (row == rows.size()) rows.emplace_back();
    } else if (c == '\x1b') {
      const std::string_view rest = out.substr(i);
      if (rest.starts_with("\x1b[K")) {
        rows[row].resize(std::min(rows[row].size(), col));
        i += 2;
      } else if (rest.starts_with("\x1b[A")) {
        if (row == 0) throw std::runtime_error("cursor up past the first row");
        --row;
        i += 2;
      } else if (rest.starts_with("\x1b[?7l") || rest.starts_with("\x1b[?7h")) {
        i += 4;
      } else {
        throw std::runtime_error("unexpected escape sequence at byte " + std::to_string(i));
      }
    } else {
      if (rows[row].size() < col) rows[row].resize(col, ' ');
      if (col < rows[row].size()) {
        rows[row][col] = c;
      } else {
        rows[row] += c;
      }
      ++col;
    }
  }
  // Blank rows at the bottom (the cursor's after a final newline, rows a display was erased
  // from) show nothing.
  while (!rows.empty() && rows.back().empty()) rows.pop_back();
  return rows;
}

}  // namespace ddft::testing
