// Accumulation models: names ("fused:32:13:rtz", ...), parsing and validation.
#include <charconv>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "fp8q/numerics/accumulation.hpp"
#include "fp8q/numerics/convert.hpp"

namespace fp8q {
namespace {

// ---- names ----------------------------------------------------------------------------------------
std::vector<std::string_view> split_colons(std::string_view s) {
  std::vector<std::string_view> parts;
  for (std::size_t start = 0;;) {
    const std::size_t colon = s.find(':', start);
    parts.push_back(s.substr(start, colon == std::string_view::npos ? std::string_view::npos : colon - start));
    if (colon == std::string_view::npos) return parts;
    start = colon + 1;
  }
}

std::optional<int> parse_int(std::string_view s) {
  int v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || ptr != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// "value" after `prefix` (e.g. "group4" -> 4); nullopt when the part is something else.
std::optional<int> parse_tagged(std::string_view part, std::string_view prefix) {
  return part.starts_with(prefix) ? parse_int(part.substr(prefix.size())) : std::nullopt;
}

// fused:n:f:ROUNDING or fused:n:alignA:resultR:ROUNDING, then :groupG and :promoteP, each
// optional, in this order.
std::optional<AccumulationModel> parse_fused(const std::vector<std::string_view>& p) {
  std::size_t i = 2;
  std::optional<int> align, result;
  if (auto f = parse_int(p[i])) {
    align = result = f, i += 1;
  } else if (p.size() >= 5) {
    align = parse_tagged(p[2], "align"), result = parse_tagged(p[3], "result"), i += 2;
  }
  const auto n = parse_int(p[1]);
  const auto r = i < p.size() ? parse_rounding(p[i++]) : std::nullopt;
  std::optional<int> group = 1, promote = 0;
  if (i < p.size() && p[i].starts_with("group")) group = parse_tagged(p[i++], "group");
  if (i < p.size()) promote = parse_tagged(p[i++], "promote");
  if (!n || !align || !result || !r || !group || !promote || i != p.size()) return std::nullopt;
  return AccumulationModel::fused_widths(*n, *align, *result, *r, *group, *promote);
}

}  // namespace

void validate(const AccumulationModel& m) {
  auto fail = [&](const std::string& what) {
    throw std::invalid_argument("accumulation model " + model_name(m) + ": " + what);
  };
  switch (m.kind) {
    case AccumKind::kFp32Sequential:
    case AccumKind::kTrainium3Mx:
      return;
    case AccumKind::kExactBlock:
    case AccumKind::kSystolic:
      if (m.block < 1) fail("block/tile size must be >= 1, got " + std::to_string(m.block));
      return;
    case AccumKind::kFused:
      if (m.block < 1 || m.block > 4096) fail("products per step n must be in [1, 4096], got " + std::to_string(m.block));
      if (m.align_bits < 1 || m.align_bits > 60)
        fail("alignment width align_bits must be in [1, 60], got " + std::to_string(m.align_bits));
      if (m.result_bits < 1 || m.result_bits > 23)
        fail("result width result_bits must be in [1, 23], got " + std::to_string(m.result_bits));
      if (m.group < 1 || m.group > m.block)
        fail("product group size must be in [1, n = " + std::to_string(m.block) + "], got " + std::to_string(m.group));
      if (m.rounding != Rounding::kTowardZero && m.rounding != Rounding::kNearestEven)
        fail("rounding must be rtz or rne");
      if (m.promote < 0 || (m.promote > 0 && m.promote % m.block != 0))
        fail("promote period must be a positive multiple of n, got " + std::to_string(m.promote));
      return;
  }
}

std::string model_name(const AccumulationModel& m) {
  switch (m.kind) {
    case AccumKind::kFp32Sequential: return "fp32_sequential";
    case AccumKind::kExactBlock: return "exact_block:" + std::to_string(m.block);
    case AccumKind::kSystolic: return "systolic:" + std::to_string(m.block);
    case AccumKind::kFused: {
      std::string s = "fused:" + std::to_string(m.block) + ":";
      if (m.align_bits == m.result_bits) s += std::to_string(m.result_bits);
      else s += "align" + std::to_string(m.align_bits) + ":result" + std::to_string(m.result_bits);
      s += ":" + std::string(rounding_name(m.rounding));
      if (m.group != 1) s += ":group" + std::to_string(m.group);
      if (m.promote > 0) s += ":promote" + std::to_string(m.promote);
      return s;
    }
    case AccumKind::kTrainium3Mx: {
      std::string s = m.layout == Trn3Layout::kWrapX ? "trainium3_mx:wrapx" : "trainium3_mx:1x32";
      if (!m.trn3.exact_partition_sum) s += ":rounded_partition_sum";
      if (!m.trn3.single_rounding_add) s += ":round_then_add";
      return s;
    }
  }
  return "?";
}

std::optional<AccumulationModel> parse_model(std::string_view name) {
  const std::vector<std::string_view> p = split_colons(name);
  std::optional<AccumulationModel> m;
  if (p[0] == "fp32_sequential" && p.size() == 1) {
    m = AccumulationModel::fp32_sequential();
  } else if ((p[0] == "exact_block" || p[0] == "systolic") && p.size() == 2) {
    if (auto b = parse_int(p[1]))
      m = p[0] == "exact_block" ? AccumulationModel::exact_block(*b) : AccumulationModel::systolic(*b);
  } else if (p[0] == "fused" && p.size() >= 4) {
    m = parse_fused(p);
  } else if (p[0] == "trainium3_mx" && p.size() >= 2 && p.size() <= 4) {
    AccumulationModel t = AccumulationModel::trainium3_mx(Trn3Layout::kWrapX);
    bool ok = p[1] == "wrapx" || p[1] == "1x32";
    if (p[1] == "1x32") t.layout = Trn3Layout::k1x32;
    for (std::size_t i = 2; i < p.size(); ++i) {
      if (p[i] == "rounded_partition_sum" && t.trn3.exact_partition_sum) t.trn3.exact_partition_sum = false;
      else if (p[i] == "round_then_add" && t.trn3.single_rounding_add) t.trn3.single_rounding_add = false;
      else ok = false;
    }
    if (ok) m = t;
  }
  if (m) validate(*m);
  return m;
}

}  // namespace fp8q
