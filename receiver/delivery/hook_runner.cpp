#include "receiver/delivery/hook_runner.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include "common/fd.hpp"
#include "common/json.hpp"
#include "common/named_thread.hpp"

extern char** environ;

namespace ddft::receiver {
namespace {
using namespace std::chrono;

// Output kept per hook: the tail, for the log line of a failure.
constexpr size_t kOutputKept = 4096;
constexpr size_t kOutputLinesLogged = 3;
constexpr size_t kOutputLineMax = 200;  // bytes of one logged output line
// How often a running hook's deadline is checked while it is silent. Also bounds how long a
// finished hook whose output pipe is still held (a background child) takes to be noticed.
constexpr int kTickMs = 50;

std::string seconds_text(nanoseconds d) {
  return fmt::format("{:.3f} s", duration<double>(d).count());
}

// The last few lines of `out`, each cut to kOutputLineMax bytes, as one JSON string ("" when
// there was no output).
std::string output_tail(std::string_view out) {
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.remove_suffix(1);
  if (out.empty()) return "";
  std::vector<std::string_view> lines;
  while (!out.empty() && lines.size() < kOutputLinesLogged) {
    const size_t nl = out.rfind('\n');
    std::string_view line = nl == std::string_view::npos ? out : out.substr(nl + 1);
    out = nl == std::string_view::npos ? std::string_view() : out.substr(0, nl);
    lines.push_back(line);
  }
  std::string text;
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    if (!text.empty()) text += '\n';
    text += it->size() > kOutputLineMax ? std::string(it->substr(0, kOutputLineMax)) + "..."
                                        : std::string(*it);
  }
  return common::json_quote(text);
}

// posix_spawn's attributes and file actions, released on every way out. Set for a hook: stdin
// from /dev/null, stdout and stderr to `out_fd`, every other descriptor closed, a process group of
// its own, default signal handling and an empty mask.
struct SpawnSetup {
  posix_spawnattr_t attr;
  posix_spawn_file_actions_t actions;
  explicit SpawnSetup(int out_fd) {
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_init(&actions);
    // Every other descriptor of the receiver closed (the log file, the socket, the output folder
    // and its lock), whether or not it was opened close-on-exec.
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, out_fd, STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out_fd, STDERR_FILENO);
    posix_spawn_file_actions_addclosefrom_np(&actions, STDERR_FILENO + 1);
    // A process group of its own, so a timeout kills everything it started; default signal
    // handling and an empty mask, whatever the receiver's threads have.
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setflags(
        &attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;
};

// The argument and environment vectors of one hook: `shell -c "CMD \"$@\"" ddft-on-complete PATH`,
// with the receiver's environment plus DDFT_PATH, DDFT_REL_PATH, DDFT_SIZE, DDFT_KEY,
// DDFT_SESSION, DDFT_CHANNEL (the sender's channel, empty without one), DDFT_SENDER (its sender's
// id, or session-ID without one), DDFT_FEC_REBUILT and DDFT_REPEAT_FILLED (its repairs),
// replacing any inherited ones. argv and envp point into this object and into
// `environ`: neither moves nor copies.
struct SpawnArgs {
  std::vector<std::string> args;
  std::vector<std::string> env_own;
  std::vector<char*> argv;
  std::vector<char*> envp;

  SpawnArgs(const HookOptions& opts, const DeliveredFile& file)
      // The path is an argument, never shell text: "$@" expands to it verbatim.
      : args{opts.shell, "-c", opts.command + " \"$@\"", "ddft-on-complete", file.final_path},
        env_own{
            "DDFT_PATH=" + file.final_path,
            "DDFT_REL_PATH=" + file.file.path,
            "DDFT_SIZE=" + std::to_string(file.file.size),
            "DDFT_KEY=" + file.key,
            fmt::format("DDFT_SESSION={:016x}", file.file.session),
            "DDFT_CHANNEL=" + file.channel,
            "DDFT_SENDER=" + file.sender,
            "DDFT_FEC_REBUILT=" + std::to_string(file.repairs.fec_rebuilt),
            "DDFT_REPEAT_FILLED=" + std::to_string(file.repairs.repeat_filled),
        } {
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
      const std::string_view v(*e);
      bool ours = false;
      for (const auto& o : env_own) {
        const size_t eq = o.find('=');
        if (v.substr(0, eq + 1) == std::string_view(o).substr(0, eq + 1)) ours = true;
      }
      if (!ours) envp.push_back(*e);
    }
    for (auto& o : env_own) envp.push_back(o.data());
    envp.push_back(nullptr);
  }
  SpawnArgs(const SpawnArgs&) = delete;
  SpawnArgs& operator=(const SpawnArgs&) = delete;
};

// Reads what is available on the non-blocking `out_r` into `output`, keeping its last
// kOutputKept bytes or more; resets `out_r` at end of file.
void read_output(common::UniqueFd& out_r, std::string& output) {
  char buf[4096];
  while (out_r) {
    const ssize_t n = ::read(out_r.get(), buf, sizeof buf);
    if (n > 0) {
      output.append(buf, static_cast<size_t>(n));
      if (output.size() > 2 * kOutputKept) output.erase(0, output.size() - kOutputKept);
    } else if (n == 0) {
      out_r.reset();  // EOF
    } else if (errno != EINTR) {
      return;  // EAGAIN: nothing more for now
    }
  }
}

// How a hook ended: its wait status, whether it ran past its timeout, and the tail of its output.
struct HookExit {
  int status = 0;
  bool timed_out = false;
  std::string output;
};

// Waits for the started hook `pid` (the leader of its own process group) while collecting its
// output from `out_r`: at opts.timeout after `start` its group gets SIGTERM, at opts.kill_grace
// after that SIGKILL. Reaps it, and says how it ended in *ended. False, with *why set, if waitid
// fails (the hook is then neither killed nor reaped here).
[[nodiscard]] bool wait_for_hook(pid_t pid, common::UniqueFd& out_r, const HookOptions& opts,
                                 common::Clock& clock, common::Clock::time_point start,
                                 HookExit* ended_out, std::string* why) {
  HookExit& ended = *ended_out;
  bool kill_sent = false;
  int polls_since_eof = 0;
  common::Clock::time_point term_at{};
  siginfo_t info{};
  while (true) {
    // Exited? WNOWAIT leaves it a zombie, so its pid (the group's id) cannot be reused before
    // the group is killed below.
    info.si_pid = 0;
    if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0 &&
        errno != EINTR) {
      *why = fmt::format("waitid: {}", std::strerror(errno));
      return false;
    }
    if (info.si_pid == pid) break;
    const auto now = clock.now();
    if (!ended.timed_out && now - start >= opts.timeout) {
      ::kill(-pid, SIGTERM);
      ended.timed_out = true;
      term_at = now;
    } else if (ended.timed_out && !kill_sent && now - term_at >= opts.kill_grace) {
      ::kill(-pid, SIGKILL);
      kill_sent = true;
    }
    if (out_r) {
      pollfd p{out_r.get(), POLLIN, 0};
      if (::poll(&p, 1, kTickMs) > 0) read_output(out_r, ended.output);
    } else {
      // Output closed, not exited yet: it is exiting now (check again at once), or it closed
      // its streams and goes on (then check at the normal pace).
      ::poll(nullptr, 0, ++polls_since_eof < 20 ? 5 : kTickMs);
    }
  }
  // What it wrote last; a background child still holding the pipe is not waited for.
  read_output(out_r, ended.output);
  if (ended.timed_out) ::kill(-pid, SIGKILL);  // whatever of the group outlived the TERM
  while (::waitpid(pid, &ended.status, 0) < 0 && errno == EINTR) {
  }
  return true;
}

// Logs how the hook of `file` ended, `took` after its start, and counts it in `counters`.
void report_exit(const DeliveredFile& file, const HookExit& ended, nanoseconds took,
                 const HookOptions& opts, HookCounters& counters) {
  const int status = ended.status;
  const std::string quoted = common::json_quote(file.file.path);
  const std::string tail = output_tail(ended.output);
  const std::string more = tail.empty() ? "" : "; output: " + tail;
  if (ended.timed_out) {
    spdlog::warn("Warn: on-complete {}: timed out after {:g} s (process group killed{})", quoted,
                 duration<double>(opts.timeout).count(), more);
    ++counters.timed_out;
  } else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    spdlog::info("Info: on-complete {}: exit 0 ({})", quoted, seconds_text(took));
    ++counters.ok;
  } else if (WIFEXITED(status)) {
    spdlog::warn("Warn: on-complete {}: exit {} ({}{})", quoted, WEXITSTATUS(status),
                 seconds_text(took), more);
    ++counters.failed;
  } else {
    const int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    const char* name = sigabbrev_np(sig);
    spdlog::warn("Warn: on-complete {}: killed by signal {} ({}{}{})", quoted, sig,
                 name ? fmt::format("SIG{}, ", name) : "", seconds_text(took), more);
    ++counters.failed;
  }
}

}  // namespace

HookRunner::HookRunner(HookOptions opts, common::Clock& clock)
    : opts_(std::move(opts)), clock_(clock) {
  const unsigned jobs = opts_.jobs == 0 ? 1 : opts_.jobs;
  for (unsigned i = 0; i < jobs; ++i) {
    threads_.push_back(
        common::start_named_thread(fmt::format("dd-hook{}", i + 1), [this] { worker(); }));
  }
}

HookRunner::~HookRunner() { stop(); }

void HookRunner::enqueue(const DeliveredFile& file) {
  std::string why;
  {
    std::lock_guard lock(mu_);
    if (stopping_) {
      why = "receiver stopping";
    } else if (queue_.size() >= opts_.max_pending) {
      why = fmt::format("queue full: {} waiting", queue_.size());
    } else {
      queue_.push_back(file);
      cv_.notify_one();
      return;
    }
  }
  not_run(file, why);  // logged outside the lock
}

void HookRunner::file_moved(const std::string& from, const std::string& to) {
  std::lock_guard lock(mu_);
  for (DeliveredFile& f : queue_) {
    if (f.final_path == from) f.final_path = to;
  }
}

bool HookRunner::wait_idle(std::stop_token stop) {
  std::unique_lock lock(mu_);
  return idle_cv_.wait(lock, stop, [this] { return queue_.empty() && running_ == 0; });
}

size_t HookRunner::pending() const {
  std::lock_guard lock(mu_);
  return queue_.size();
}

bool HookRunner::stopping() const {
  std::lock_guard lock(mu_);
  return stopping_;
}

void HookRunner::stop() {
  {
    std::lock_guard lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    stopping_ = true;
  }
  cv_.notify_all();
  threads_.clear();  // joins: each finishes the hook it runs, up to its timeout
  std::deque<DeliveredFile> left;
  {
    std::lock_guard lock(mu_);
    left.swap(queue_);
  }
  for (const DeliveredFile& f : left) not_run(f, "receiver stopping");
  const uint64_t ok = counters_.ok, failed = counters_.failed, timed_out = counters_.timed_out,
                 skipped = counters_.not_run;
  if (ok + failed + timed_out + skipped > 0) {
    spdlog::info("Info: on-complete: {} ok, {} failed, {} timed out, {} not run", ok, failed,
                 timed_out, skipped);
  }
}

void HookRunner::worker() {
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;  // stop() logs what is left
    DeliveredFile file = std::move(queue_.front());
    queue_.pop_front();
    ++running_;
    lock.unlock();
    // Nothing may leave a stage thread: a failure to run one hook is that hook's outcome.
    try {
      run_one(file);
    } catch (const std::exception& e) {
      spdlog::error("Error: on-complete {}: {}", common::json_quote(file.file.path), e.what());
      ++counters_.failed;
    }
    lock.lock();
    --running_;
    idle_cv_.notify_all();
  }
}

void HookRunner::not_run(const DeliveredFile& file, const std::string& why) {
  spdlog::warn("Warn: on-complete {}: not run ({}; file: {})", common::json_quote(file.file.path),
               why, common::json_quote(file.final_path));
  ++counters_.not_run;  // after the line: whoever sees the count finds the line
}

void HookRunner::run_one(const DeliveredFile& file) {
  // The command's output, both streams, through one pipe. Close-on-exec: a hook started at the
  // same time by another thread must not inherit it (it would hold our end open).
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    not_run(file, fmt::format("cannot make a pipe: {}", std::strerror(errno)));
    return;
  }
  common::UniqueFd out_r(fds[0]);
  common::UniqueFd out_w(fds[1]);

  const SpawnSetup setup(out_w.get());
  SpawnArgs spawn_args(opts_, file);
  pid_t pid = -1;
  const auto start = clock_.now();
  const int rc = ::posix_spawn(&pid, opts_.shell.c_str(), &setup.actions, &setup.attr,
                               spawn_args.argv.data(), spawn_args.envp.data());
  out_w.reset();  // the child has its copy; EOF comes when it (and what it started) closes it
  if (rc != 0) {
    not_run(file, fmt::format("cannot start {}: {}", opts_.shell, std::strerror(rc)));
    return;
  }
  ::fcntl(out_r.get(), F_SETFL, O_NONBLOCK);

  HookExit ended;
  if (std::string why; !wait_for_hook(pid, out_r, opts_, clock_, start, &ended, &why)) {
    spdlog::error("Error: on-complete {}: {}", common::json_quote(file.file.path), why);
    ++counters_.failed;
    return;
  }
  report_exit(file, ended, clock_.now() - start, opts_, counters_);
}

}  // namespace ddft::receiver
