// fp8q: FP8 and MX numerics from the command line.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "verbs.hpp"

int main(int argc, char** argv) {
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
