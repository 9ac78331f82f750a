// The live progress display of dd_file_send (--progress): on a terminal, a line for the file
// being sent and one for the whole batch, redrawn in place below the log lines at most ~10 times
// a second. Log lines written meanwhile stay whole above it: the bar is erased before each and
// drawn again after, under the console's lock (common::Console). When the session ends the bar
// is erased and only the log lines remain. Without a terminal it is not created at all, so pipes,
// files and the journal never see an escape code or a carriage return.
//
//   photos/2024/c.jpg [##########----------]  50.0%  20.0/40.0 MB  20.00 MB/s  ETA 00:00:01
//   total 1/3 files   [#####---------------]  25.0%  20.0/80.0 MB  20.00 MB/s  ETA 00:00:03
//
// For a source that keeps giving files (the hot folder) the batch has no end, so its line has no
// percent and no ETA: files done, bytes sent, the rate and, when the source can tell, its queue.
//
// render_progress() is pure. ProgressDisplay's callbacks come from the transmit threads, one at
// a time; it draws through the console's lock, and the console and the clock are the caller's.
// Nothing here throws.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.hpp"
#include "common/logging.hpp"
#include "sender/events.hpp"
#include "sender/source/file_list.hpp"

namespace ddft::sender {

// --progress: "on" draws; "auto" (the default) when stdout is a terminal and not --quiet; "off"
// never.
// --progress: auto (a terminal and not --quiet), on, off.
enum class ProgressMode { kAuto, kOn, kOff };
bool progress_wanted(ProgressMode mode, bool quiet, bool stdout_is_terminal);
// stdout is a terminal that takes escape codes (TERM is not "dumb").
bool stdout_is_terminal();

// What the display shows at one moment: the input of render_progress().
struct ProgressView {
  bool has_file = false;    // a file is being sent
  std::string file_name;    // as the receiver is told it
  uint64_t file_done = 0;   // its bytes sent (of every copy with --repeat)
  uint64_t file_total = 0;  // its bytes to send (size x copies)
  double file_rate = 0;     // MB/s (2^20 bytes), since the file started
  uint64_t files_done = 0;  // sent or failed
  uint64_t files_failed = 0;
  std::optional<uint64_t> files_total;  // known for a one-shot send; nothing: open-ended
  uint64_t batch_done = 0;              // bytes sent in the session (one-shot: of the listed sizes)
  std::optional<uint64_t> batch_total;  // with files_total
  double batch_rate = 0;                // MB/s over the last few seconds
  std::optional<Backlog> backlog;       // open-ended: what the source has queued, when it can tell
};

// The display's lines for `view` on a terminal `width` columns wide: plain text (no escape
// codes, no newline), each at most width - 1 columns, so that no line ever wraps. As the terminal
// narrows the bar goes first, then the bytes, the rate and the ETA; a name that does not fit is
// shortened from the left ("...2024/c.jpg"). Control bytes and invalid UTF-8 in names are shown
// as '?', so a hostile name cannot drive the terminal.
std::vector<std::string> render_progress(const ProgressView& view, size_t width);

struct ProgressOptions {
  unsigned copies = 1;  // --repeat: every file is sent this many times
  // One-shot: the listed sizes of the files in the order they are sent (the reader takes them in
  // list order and the transmitter reports them in that order, unreadable ones included).
  // Nothing: an open-ended source.
  std::optional<std::vector<uint64_t>> planned;
  // Open-ended: asked for their backlogs (summed) at each redraw; may be empty (no backlog shown).
  // Each must outlive the display.
  std::vector<const FileSource*> sources;
  // The terminal's width in columns. Empty: TIOCGWINSZ on the console's file, else $COLUMNS,
  // else 80.
  std::function<size_t()> columns;
  // Redraws at most this often (file starts and ends included): the link's thread pays for each.
  common::Clock::duration interval = std::chrono::milliseconds(100);
};

// The SendObserver that draws the display on `console`. Its callbacks come from the transmit
// threads, one at a time; each costs a clock read until a redraw is due. The console may be written
// to from any thread meanwhile. `console` and `clock` must outlive it. Not copyable.
class ProgressDisplay final : public SendObserver, private common::Console::Overlay {
 public:
  ProgressDisplay(common::Console& console, common::Clock& clock, ProgressOptions options);
  // Erases the display if it is still shown (the session ended by an exception) and detaches
  // it from the console.
  ~ProgressDisplay() override;
  ProgressDisplay(const ProgressDisplay&) = delete;
  ProgressDisplay& operator=(const ProgressDisplay&) = delete;

  void session_started(uint64_t session_id) override;
  void file_started(const FileMeta& file) override;
  void file_progress(const FileMeta& file, uint64_t sent) override;
  void file_sent(const FileMeta& file, const common::Digest& digest) override;
  void file_failed(const FileMeta& file, const std::string& reason) override;
  void idle() override;
  void session_finished(uint64_t session_id) override;

  // What would be drawn now. Transmit thread (or tests) only.
  ProgressView view() const;

 private:
  struct Current {
    uint32_t file_id = 0;
    std::string name;
    uint64_t total = 0;
    uint64_t sent = 0;
    uint64_t planned = 0;  // its listed size x copies (one-shot)
    common::Clock::time_point started{};
  };
  struct Sample {
    common::Clock::time_point at;
    uint64_t bytes;
  };

  void file_done(const FileMeta& file, bool failed);
  void maybe_draw();
  void redraw(common::Clock::time_point now);
  size_t columns() const;
  // Under the console's lock: erases the display and forgets it.
  void hide(std::FILE* out);
  // Console::Overlay, called under the console's lock: around a log line, erases the display
  // and draws it again (shown_ is kept).
  void erase(std::FILE* out) override;
  void draw(std::FILE* out) override;

  common::Console& console_;
  common::Clock& clock_;
  ProgressOptions options_;
  uint64_t planned_total_ = 0;  // sum of options_.planned x copies

  // The transmit threads only, one at a time (the LaneHub serialises them).
  bool running_ = false;  // between session_started() and session_finished()
  std::optional<Current> current_;
  uint64_t files_done_ = 0;
  uint64_t files_failed_ = 0;
  uint64_t planned_done_ = 0;  // listed bytes of the files done (one-shot)
  uint64_t bytes_sent_ = 0;    // every file byte packetised in the session
  // Files being sent (lanes and channels: several at once): their bytes sent so far, and since
  // when.
  struct InFlight {
    uint64_t sent = 0;
    common::Clock::time_point started{};
  };
  std::map<uint32_t, InFlight> in_flight_;
  std::deque<Sample> samples_;  // (time, bytes_sent_) at each redraw, for the batch rate
  common::Clock::time_point next_draw_{};

  // Guarded by the console's lock: what is on the screen now.
  std::string shown_;       // escape codes included, as written
  size_t shown_lines_ = 0;  // 0: nothing shown
};

}  // namespace ddft::sender
