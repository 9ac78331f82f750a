// Starting a pipeline stage on a thread of its own, named for `top -H`, `ps -L` and gdb.
//
// Every long-lived thread of both programs starts through start_named_thread(), so each one has
// a name of the form "dd-<stage>" (at most 15 characters, the kernel's limit) and the places
// where threads start can be found with one grep. The programs' main threads keep the program's
// name: operators find the daemon by it (pgrep, systemd, ps).
//
// Any thread may start one. The caller owns the returned std::jthread, which requests a stop and
// joins when destroyed. Throws what std::jthread throws (std::system_error) when no thread can
// be started.
#pragma once

#include <pthread.h>

#include <concepts>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>

namespace ddft::common {

// The kernel's limit on a thread's name, without the terminating NUL.
inline constexpr size_t kMaxThreadName = 15;

// Names the calling thread; a longer name is cut to kMaxThreadName characters.
inline void set_thread_name(const std::string& name) {
  const std::string cut = name.substr(0, kMaxThreadName);
  pthread_setname_np(pthread_self(), cut.c_str());
}

// Starts `body` on a new thread named `name`. `body` takes a std::stop_token (the jthread's
// own: requested by request_stop() or on destruction) or nothing. The thread is joined when the
// returned jthread is destroyed.
template <typename F>
std::jthread start_named_thread(std::string name, F&& body) {
  return std::jthread(
      [name = std::move(name), body = std::forward<F>(body)](std::stop_token stop) mutable {
        set_thread_name(name);
        if constexpr (std::invocable<F&, std::stop_token>) {
          body(stop);
        } else {
          body();
        }
      });
}

}  // namespace ddft::common
