// What quantize and verify share (pipeline/shared.hpp).
#include "pipeline/shared.hpp"

#include <algorithm>
#include <array>
#include <set>

#include "fp8q/checkpoint/safetensors.hpp"
#include "safetensors/text.hpp"

namespace fp8q::checkpoint::pipeline {
using detail::quote;

std::map<std::string, std::string> shard_metadata(const Layout& layout, const LayoutOptions& o) {
  std::map<std::string, std::string> m{{"format", "pt"}, {std::string(kMetaLayout), std::string(layout.name())}};
  if (o.granularity) m[std::string(kMetaGranularity)] = granularity_name(*o.granularity);
  if (o.pack) m[std::string(kMetaPack)] = std::string(trn3::k_layout_name(*o.pack));
  m[std::string(kMetaWeightFormat)] = layout.name() == "trn2"                                       ? "e4m3"
                                     : layout.name() == "ct-nvfp4" || layout.name() == "ct-mxfp4" ? "e2m1"
                                     : o.element                                                  ? format_of(*o.element).name
                                                                                                  : "e4m3fn";
  return m;
}

LayoutOptions options_from_metadata(const std::map<std::string, std::string>& m) {
  LayoutOptions o;
  if (auto it = m.find(std::string(kMetaGranularity)); it != m.end()) {
    o.granularity = parse_granularity(it->second);
    if (!o.granularity)
      throw FormatError("__metadata__ " + std::string(kMetaGranularity) + " = " + quote(it->second) + " is not a granularity");
  } else if (auto old = m.find(std::string(kMetaStrategy)); old != m.end()) {  // written before fp8q.granularity
    o.granularity = parse_ct_strategy(old->second);
    if (!o.granularity) throw FormatError("__metadata__ " + std::string(kMetaStrategy) + " = " + quote(old->second) + " is not a strategy");
  }
  const auto layout = m.find(std::string(kMetaLayout)), element = m.find(std::string(kMetaWeightFormat));
  if (layout != m.end() && layout->second == "trn3-mx" && element != m.end() && element->second == "e2m1")
    o.element = FormatId::kE2M1;  // trn3-mx's one layout option the format key carries
  if (auto it = m.find(std::string(kMetaPack)); it != m.end()) {
    o.pack = trn3::parse_k_layout(it->second);
    if (!o.pack) throw FormatError("__metadata__ " + std::string(kMetaPack) + " = " + quote(it->second) + " is not wrapX or 1x32");
  }
  return o;
}

void complete_config_context(ConfigContext& c) {
  const bool lm_head_listed = std::any_of(c.kept_linear_modules.begin(), c.kept_linear_modules.end(),
                                          [](const std::string& m) { return m == "lm_head" || m.ends_with(".lm_head"); });
  if (!lm_head_listed) c.kept_linear_modules.push_back("lm_head");
  std::sort(c.quantized_modules.begin(), c.quantized_modules.end());
  std::sort(c.kept_linear_modules.begin(), c.kept_linear_modules.end());
}

std::vector<std::vector<std::string>> fused_groups(const std::vector<std::string>& modules) {
  static constexpr std::array<std::array<std::string_view, 3>, 3> kGroups = {
      {{"q_proj", "k_proj", "v_proj"}, {"q_a_proj", "kv_a_proj_with_mqa", ""}, {"gate_proj", "up_proj", ""}}};
  const std::set<std::string> listed(modules.begin(), modules.end());
  std::vector<std::vector<std::string>> groups;
  for (const std::string& module : modules) {
    const std::size_t dot = module.rfind('.');
    const std::string parent = dot == std::string::npos ? "" : module.substr(0, dot + 1);
    const std::string_view leaf = std::string_view(module).substr(parent.size());
    for (const auto& kind : kGroups) {
      if (leaf != kind[0]) continue;
      std::vector<std::string> group;
      for (std::string_view m : kind)
        if (!m.empty()) group.push_back(parent + std::string(m));
      if (std::all_of(group.begin(), group.end(), [&](const std::string& g) { return listed.count(g) > 0; }))
        groups.push_back(std::move(group));
    }
  }
  return groups;
}

}  // namespace fp8q::checkpoint::pipeline
