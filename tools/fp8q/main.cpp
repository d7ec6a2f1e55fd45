// fp8q: FP8 and MX numerics from the command line.
#include <CLI/CLI.hpp>
#include <malloc.h>

#include <cstdio>
#include <exception>

#include "verbs.hpp"

int main(int argc, char** argv) {
  // Keep freed blocks of up to 32 MiB in the heap instead of returning them to the kernel:
  // the verbs that work tensor by tensor (quantize, calibrate, matmul) allocate buffers of
  // the same sizes again and again, and each fresh mapping costs a page fault per 4 KiB.
  // (glibc's defaults adapt the threshold upward only after the first free of such a block.)
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
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
  try {
    app.parse(argc, argv);  // runs the chosen verb's callback
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "fp8q: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fp8q: %s\n", e.what());
    return 2;
  }
  return 0;
}
