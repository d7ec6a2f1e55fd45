// fp8q/checkpoint/stop.hpp: a request to stop, for the writers of files and checkpoints.
//
// A signal's default action ends a process where it stands, leaving the temporary files and
// staging directories that the writers remove only when an error unwinds them. A program
// that installs handlers (fp8q's CLI does, for SIGINT, SIGTERM and SIGHUP) calls
// request_stop() from them; the writers check between chunks of at most a few MiB and between
// tensors, and throw Stopped, so the stack unwinds, every temporary is removed and nothing
// partial is left at the destination.
#pragma once

#include <stdexcept>

namespace fp8q::checkpoint {

class Stopped : public std::runtime_error {
 public:
  explicit Stopped(int signal) : std::runtime_error("interrupted"), signal_(signal) {}
  int signal() const { return signal_; }  // what request_stop() was given (0: none)

 private:
  int signal_;
};

// Async-signal-safe: lock-free atomic stores only. `signal` is passed on to Stopped.
void request_stop(int signal = 0) noexcept;
bool stop_requested() noexcept;
// Throws Stopped when a stop was requested.
void throw_if_stop_requested();
// Forgets a request (for tests, and for a program that carries on after one).
void clear_stop() noexcept;

}  // namespace fp8q::checkpoint
