// fp8q: FP8 and MX numerics from the command line.
#include <CLI/CLI.hpp>
#include <malloc.h>
#include <signal.h>

#include <cstdio>
#include <exception>

#include "fp8q/checkpoint/stop.hpp"
#include "verbs.hpp"

namespace {

// SIGINT, SIGTERM, SIGHUP: ask the writers to stop (they remove their temporary files and
// staging directories as the error unwinds, and the verb exits 128 + the signal). A second
// signal gets the default action, so a process that does not stop can still be ended.
extern "C" void on_stop_signal(int sig) {
  fp8q::checkpoint::request_stop(sig);
  ::signal(sig, SIG_DFL);
}

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // system calls carry on; the writers check between chunks
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
  // Past a file-size limit (ulimit -f) a write fails with EFBIG and the verb cleans up,
  // instead of the process being killed with its temporary files left behind.
  ::signal(SIGXFSZ, SIG_IGN);
}

}  // namespace

int main(int argc, char** argv) {
  // Keep freed blocks of up to 32 MiB in the heap instead of returning them to the kernel:
  // the verbs that work tensor by tensor (quantize, calibrate, matmul) allocate buffers of
  // the same sizes again and again, and each fresh mapping costs a page fault per 4 KiB.
  // (glibc's defaults adapt the threshold upward only after the first free of such a block.)
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
  install_signal_handlers();
  CLI::App app{"fp8q: exact FP8 and MX (microscaling) conversions, scaling and checks"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "fp8q 0.1.0");
  fp8q::cli::add_formats(app);
  fp8q::cli::add_convert(app);
  fp8q::cli::add_dump(app);
  fp8q::cli::add_tensors(app);
  fp8q::cli::add_quantize(app);
  fp8q::cli::add_bench(app);
  fp8q::cli::add_calibrate(app);
  fp8q::cli::add_matmul(app);
  fp8q::cli::add_compare(app);
  fp8q::cli::add_vectors(app);
  fp8q::cli::add_fit(app);
  try {
    app.parse(argc, argv);  // runs the chosen verb's callback
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const fp8q::checkpoint::Stopped& e) {
    std::fprintf(stderr, "fp8q: interrupted; no output was written (temporary files removed)\n");
    return 128 + (e.signal() > 0 ? e.signal() : SIGINT);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "fp8q: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fp8q: %s\n", e.what());
    return 2;
  }
  return 0;
}
