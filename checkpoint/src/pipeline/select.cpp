// keep_reason(): which tensors a checkpoint quantization leaves alone (pipeline.hpp).
#include <regex>

#include "fp8q/checkpoint/pipeline.hpp"
#include "safetensors/text.hpp"

namespace fp8q::checkpoint {
using detail::quote;
namespace {

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

// The last component of the module path ("model.layers.0.mlp.gate" -> "gate").
std::string_view leaf(std::string_view module) {
  const auto dot = module.rfind('.');
  return dot == std::string_view::npos ? module : module.substr(dot + 1);
}

// std::regex matches by recursion, one frame per character a pattern like ".*x" walks: a
// hostile name of 50000 bytes overflowed the stack. Real tensor names are under 200 bytes.
constexpr std::size_t kMaxMatchedName = 4096;

}  // namespace

std::optional<std::string> keep_reason(const TensorInfo& t, const std::vector<std::string>& ignore, const Layout& layout,
                                       const LayoutOptions& options) {
  if (t.dtype != DType::kF32 && t.dtype != DType::kBF16 && t.dtype != DType::kF16)
    return "dtype " + std::string(dtype_name(t.dtype));
  if (t.shape.size() != 2) return t.shape.size() == 1 ? std::string("1-D") : std::to_string(t.shape.size()) + "-D";
  const std::string_view name = t.name;
  if (!name.ends_with(".weight")) return "not a .weight";
  const std::string_view module = name.substr(0, name.size() - 7);
  const std::string_view last = leaf(module);
  if (contains(name, "embed") || last == "wte" || last == "wpe") return "embedding";
  if (last == "lm_head") return "lm_head";
  if (contains(last, "norm") || last.starts_with("ln_") || last == "ln") return "norm";
  if (last == "gate" || contains(last, "router") || last == "shared_expert_gate") return "router/gate";
  if (!ignore.empty() && t.name.size() > kMaxMatchedName)
    throw PipelineError("tensor " + quote(t.name.substr(0, 64)) + "... has a name of " + std::to_string(t.name.size()) +
                        " bytes: too long to match --ignore patterns against (at most " +
                        std::to_string(kMaxMatchedName) + ")");
  for (const auto& pattern : ignore)
    if (std::regex_search(t.name, std::regex(pattern, std::regex::ECMAScript))) return "--ignore " + pattern;
  if (t.shape[0] == 0 || t.shape[1] == 0) return "empty";
  if (auto why = layout.cannot_quantize(t.shape, options)) return *why;
  return std::nullopt;
}

}  // namespace fp8q::checkpoint
