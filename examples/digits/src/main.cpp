// fp8q-eval-digits: accuracy of the digits example model in any checkpoint layout.
//
//   fp8q-eval-digits MODEL_DIR TEST_FILE [--layout L] [--reference DIR] [--json] [--dump-weights FILE]
//
// Loads MODEL_DIR (original, or what `fp8q quantize --layout L` wrote), dequantizes each
// linear layer's weight by the layout's public definition (layout.hpp), runs the forward
// pass in fp32 on TEST_FILE (inputs F32 [n, input_size], labels I64 [n]) and prints the
// accuracy. --reference DIR (e.g. the original model) adds how many predictions agree with
// that model's and the largest |logit difference|. --dump-weights writes the dequantized weights as F32 safetensors, so a test can
// compare them with its own decoding. Errors: a message on stderr, exit code 2.
#include "layout.hpp"
#include "mlp.hpp"
#include "model_files.hpp"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>

namespace {
using namespace digits;
using fp8q::checkpoint::DType;

struct TestSet {
  Matrix inputs;
  std::vector<std::int64_t> labels;
};

TestSet load_test_set(const std::string& path, std::uint64_t input_size, std::uint64_t num_labels) {
  ModelFiles f(path);
  const Tensor x = f.at("inputs"), y = f.at("labels");
  if (x.dtype != DType::kF32 || x.shape.size() != 2 || x.shape[1] != input_size)
    throw std::runtime_error(path + ": tensor \"inputs\" must be F32 [n, " + std::to_string(input_size) + "], is " +
                             std::string(fp8q::checkpoint::dtype_name(x.dtype)) + " " + shape_string(x.shape));
  const std::uint64_t n = x.shape[0];
  if (y.dtype != DType::kI64 || y.shape != std::vector<std::uint64_t>{n})
    throw std::runtime_error(path + ": tensor \"labels\" must be I64 [" + std::to_string(n) + "], is " +
                             std::string(fp8q::checkpoint::dtype_name(y.dtype)) + " " + shape_string(y.shape));
  TestSet t;
  const std::vector<float> xv = float_values(x);
  t.inputs = Eigen::Map<const Matrix>(xv.data(), static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(input_size));
  t.labels.resize(n);
  if (n) std::memcpy(t.labels.data(), y.bytes.data(), n * 8);
  for (std::uint64_t i = 0; i < n; ++i)
    if (t.labels[i] < 0 || static_cast<std::uint64_t>(t.labels[i]) >= num_labels)
      throw std::runtime_error(path + ": labels[" + std::to_string(i) + "] = " + std::to_string(t.labels[i]) +
                               " is not a class 0.." + std::to_string(num_labels - 1));
  return t;
}

std::string format_g(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", x);
  return b;
}

void dump_weights(const Mlp& mlp, const std::string& path) {
  std::vector<fp8q::checkpoint::TensorData> tensors;
  for (const Linear& l : mlp.layers)
    tensors.push_back({{l.module + ".weight", DType::kF32,
                        {static_cast<std::uint64_t>(l.weight.rows()), static_cast<std::uint64_t>(l.weight.cols())}},
                       std::as_bytes(std::span(l.weight.data(), static_cast<std::size_t>(l.weight.size())))});
  fp8q::checkpoint::write_file(path, tensors);
}

int run(int argc, char** argv) {
  CLI::App app{"Accuracy of the digits example model in any checkpoint layout (original, hf-fp8, ct-fp8, "
               "ct-mxfp8, trn2, trn3-mx)"};
  std::string model_dir, test_file, layout_opt, dump, reference;
  bool json_out = false;
  app.add_option("MODEL_DIR", model_dir, "model directory (config.json + safetensors)")->required();
  app.add_option("TEST_FILE", test_file, "test set: inputs F32 [n, 64], labels I64 [n]")->required();
  app.add_option("--layout", layout_opt, "read the model as this layout instead of detecting it from config.json");
  app.add_option("--reference", reference, "compare predictions and logits with this model directory");
  app.add_flag("--json", json_out, "print one JSON object");
  app.add_option("--dump-weights", dump, "write the dequantized weights (F32) to this safetensors file");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }

  const ModelFiles files(model_dir);
  Layout layout = detect_layout(files.config());
  if (!layout_opt.empty()) {
    const auto kind = parse_layout_name(layout_opt);
    if (!kind) throw std::runtime_error("--layout: \"" + layout_opt + "\" is not a layout");
    layout.kind = *kind;
  }
  const Mlp mlp = load_mlp(files, layout);
  const std::uint64_t classes = static_cast<std::uint64_t>(mlp.layers.back().weight.rows());
  const TestSet test = load_test_set(test_file, mlp.input_size, classes);
  const Matrix z = logits(mlp, test.inputs);
  const std::vector<std::int64_t> pred = predict(z);
  std::size_t correct = 0;
  for (std::size_t i = 0; i < pred.size(); ++i) correct += pred[i] == test.labels[i];
  const double accuracy = pred.empty() ? 0.0 : static_cast<double>(correct) / static_cast<double>(pred.size());
  if (!dump.empty()) dump_weights(mlp, dump);
  std::optional<std::size_t> agree;
  float max_logit_diff = 0.0f;
  if (!reference.empty()) {
    const ModelFiles ref_files(reference);
    const Mlp ref = load_mlp(ref_files, detect_layout(ref_files.config()));
    if (ref.input_size != mlp.input_size || static_cast<std::uint64_t>(ref.layers.back().weight.rows()) != classes)
      throw std::runtime_error("--reference " + reference + ": not the same model shape");
    const Matrix rz = logits(ref, test.inputs);
    const std::vector<std::int64_t> rp = predict(rz);
    agree = 0;
    for (std::size_t i = 0; i < rp.size(); ++i) *agree += rp[i] == pred[i];
    max_logit_diff = (z - rz).cwiseAbs().maxCoeff();
  }

  if (json_out) {
    nlohmann::json j{{"model", model_dir}, {"layout", layout_name(layout.kind)}, {"test", test_file},
                     {"samples", pred.size()}, {"correct", correct}, {"accuracy", accuracy}};
    if (agree) {
      j["reference"] = reference;
      j["agree_with_reference"] = *agree;
      j["max_abs_logit_difference"] = max_logit_diff;
    }
    j["layers"] = nlohmann::json::array();
    for (const Linear& l : mlp.layers)
      j["layers"].push_back({{"module", l.module}, {"shape", {l.weight.rows(), l.weight.cols()}},
                             {"weight", l.how}, {"bias", l.bias_dtype},
                             {"input_scale", l.input_scale ? nlohmann::json(*l.input_scale) : nlohmann::json()}});
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "model    " << model_dir << "  (layout " << layout_name(layout.kind) << ")\n";
  for (const Linear& l : mlp.layers)
    std::cout << "  " << l.module << "  [" << l.weight.rows() << ", " << l.weight.cols() << "]  " << l.how
              << ", bias " << l.bias_dtype
              << (l.input_scale ? ", input F8_E4M3 with static scale " + format_g(*l.input_scale) : std::string())
              << "\n";
  std::cout << "test     " << test_file << "  (" << pred.size() << " samples)\n";
  char line[96];
  std::snprintf(line, sizeof line, "accuracy %zu/%zu = %.2f%%\n", correct, pred.size(), 100.0 * accuracy);
  std::cout << line;
  if (agree)
    std::cout << "agree    " << *agree << "/" << pred.size() << " predictions as " << reference
              << ", max |logit difference| " << format_g(max_logit_diff) << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "fp8q-eval-digits: " << e.what() << "\n";
    return 2;
  }
}
