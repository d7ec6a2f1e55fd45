// The verbs of the fp8q tool. Each adds its subcommand to the app; the callback runs it.
// A verb reports bad input by throwing UsageError (printed to stderr, exit code 2).
#pragma once

#include <CLI/CLI.hpp>
#include <stdexcept>

namespace fp8q::cli {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void add_formats(CLI::App& app);
void add_convert(CLI::App& app);
void add_dump(CLI::App& app);
void add_bench(CLI::App& app);
void add_tensors(CLI::App& app);  // quantize-tensors, dequantize-tensors
void add_quantize(CLI::App& app);  // quantize, verify, inspect (checkpoints)
void add_calibrate(CLI::App& app);  // calibrate (calib/ on safetensors files)
void add_matmul(CLI::App& app);   // matmul (kernels/ on safetensors files)
void add_compare(CLI::App& app);  // compare (two safetensors files, bitwise and in ULPs)
void add_vectors(CLI::App& app);  // vectors (conformance vectors that separate models)
void add_fit(CLI::App& app);      // fit (the models consistent with a device's measurements)

}  // namespace fp8q::cli
