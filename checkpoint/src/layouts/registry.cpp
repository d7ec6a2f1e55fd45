#include "layouts/registry.hpp"

#include <stdexcept>
#include <cmath>
#include <limits>

#include "fp8q/numerics/convert.hpp"
#include "layouts/common.hpp"

namespace fp8q::checkpoint {

std::optional<Granularity> parse_ct_strategy(std::string_view word) {
  if (word == "tensor") return Granularity::tensor();
  if (word == "channel") return Granularity::row();
  if (word == "block") return Granularity::block(layouts::kBlock, layouts::kBlock);
  return std::nullopt;
}

std::string_view ct_strategy(const Granularity& g) {
  if (g == Granularity::tensor()) return "tensor";
  if (g == Granularity::row()) return "channel";
  if (g == Granularity::block(layouts::kBlock, layouts::kBlock)) return "block";
  return "?";
}

// E8M0 code e -> 2^(e - 127) (code 0 is 2^-127, a subnormal fp32; 0xFF is NaN).
float DequantView::scale(std::size_t r, std::size_t c) const {
  if (!mx) return scale_inv[grid.scale_index(r, c)];
  const std::uint8_t e = e8m0[r * groups_per_row + group_of_col[c]];
  if (e == 0xFF) return std::numeric_limits<float>::quiet_NaN();
  return e == 0 ? float_of(0x00400000u) : float_of(static_cast<std::uint32_t>(e) << 23);
}

std::optional<std::string> Layout::cannot_quantize(const std::vector<std::uint64_t>&, const LayoutOptions&) const {
  return std::nullopt;
}

bool Layout::stores_experts(const LayoutOptions&) const { return false; }

std::optional<float> Layout::global_scale_of(const WeightRef&, const LayoutOptions&) const { return std::nullopt; }

std::vector<OutputTensor> Layout::store(const WeightRef&, const DequantView&, const LayoutOptions&) const {
  throw std::invalid_argument("layout " + std::string(name()) + " does not store re-encoded codes");
}

const Layout* layout_named(std::string_view name) {
  for (const Layout* l : {&layouts::hf_fp8_layout(), &layouts::ct_fp8_layout(), &layouts::ct_mxfp8_layout(),
                          &layouts::ct_mxfp4_layout(), &layouts::ct_nvfp4_layout(), &layouts::trn2_layout(), &layouts::trn3_mx_layout()})
    if (l->name() == name) return l;
  return nullptr;
}

const Layout* input_layout_named(std::string_view name) {
  for (const Layout* l : {&layouts::modelopt_nvfp4_layout(), &layouts::modelopt_fp8_layout(), &layouts::gpt_oss_mxfp4_layout(),
                          &layouts::fbgemm_fp8_layout()})
    if (l->name() == name) return l;
  return nullptr;
}

std::vector<std::string_view> layout_names() { return {"hf-fp8", "ct-fp8", "ct-mxfp8", "ct-mxfp4", "ct-nvfp4", "trn2", "trn3-mx"}; }

}  // namespace fp8q::checkpoint
