#include "fp8q/quant/granularity.hpp"

#include <charconv>
#include <stdexcept>

namespace fp8q {

MatrixShape matrix_shape(std::span<const std::uint64_t> shape) {
  MatrixShape m;
  if (shape.empty()) return m;
  m.cols = shape.back();
  std::uint64_t rows = 1;
  for (std::size_t i = 0; i + 1 < shape.size(); ++i) {
    if (shape[i] != 0 && rows > UINT64_MAX / shape[i]) throw std::invalid_argument("shape has too many elements");
    rows *= shape[i];
  }
  if (m.cols != 0 && rows > UINT64_MAX / m.cols) throw std::invalid_argument("shape has too many elements");
  m.rows = rows;
  return m;
}

BlockGrid block_grid(const Granularity& g, MatrixShape m) {
  BlockGrid grid{m.rows, m.cols, 1, 1};
  switch (g.kind) {
    case GranularityKind::kTensor:  // one block covering everything
      grid.block_rows = std::max<std::size_t>(m.rows, 1);
      grid.block_cols = std::max<std::size_t>(m.cols, 1);
      break;
    case GranularityKind::kRow: grid.block_cols = std::max<std::size_t>(m.cols, 1); break;
    case GranularityKind::kColumn: grid.block_rows = std::max<std::size_t>(m.rows, 1); break;
    case GranularityKind::kBlock:
      if (g.block_rows == 0 || g.block_cols == 0) throw std::invalid_argument("block dimensions must be >= 1");
      grid.block_rows = g.block_rows;
      grid.block_cols = g.block_cols;
      break;
    case GranularityKind::kMx:
      if (g != Granularity::mx() && g != Granularity::mx_column())
        throw std::invalid_argument("MX blocks are 1 x 32 or 32 x 1");
      grid.block_rows = g.block_rows;
      grid.block_cols = g.block_cols;
      break;
    case GranularityKind::kNvfp4:
      if (g != Granularity::nvfp4() && g != Granularity::nvfp4_column() && g != Granularity::nvfp4_2d())
        throw std::invalid_argument("NVFP4 blocks are 1 x 16, 16 x 1 or 16 x 16");
      grid.block_rows = g.block_rows;
      grid.block_cols = g.block_cols;
      break;
  }
  return grid;
}

std::optional<Granularity> parse_granularity(std::string_view name) {
  if (name == "tensor") return Granularity::tensor();
  if (name == "row") return Granularity::row();
  if (name == "col") return Granularity::column();
  if (name == "mx") return Granularity::mx();
  if (name == "mx32x1") return Granularity::mx_column();
  if (name == "nvfp4") return Granularity::nvfp4();
  if (name == "nvfp4_16x1") return Granularity::nvfp4_column();
  if (name == "nvfp4_16x16") return Granularity::nvfp4_2d();
  if (!name.starts_with("block")) return std::nullopt;
  name.remove_prefix(5);
  const auto x = name.find('x');
  if (x == std::string_view::npos) return std::nullopt;
  auto number = [](std::string_view s) -> std::optional<std::size_t> {
    std::size_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || end != s.data() + s.size() || v == 0 || s.empty()) return std::nullopt;
    return v;
  };
  const auto r = number(name.substr(0, x)), c = number(name.substr(x + 1));
  if (!r || !c) return std::nullopt;
  return Granularity::block(*r, *c);
}

std::string granularity_name(const Granularity& g) {
  switch (g.kind) {
    case GranularityKind::kTensor: return "tensor";
    case GranularityKind::kRow: return "row";
    case GranularityKind::kColumn: return "col";
    case GranularityKind::kMx: return g.block_rows == 1 ? "mx" : "mx" + std::to_string(g.block_rows) + "x" + std::to_string(g.block_cols);
    case GranularityKind::kBlock: return "block" + std::to_string(g.block_rows) + "x" + std::to_string(g.block_cols);
    case GranularityKind::kNvfp4:
      return g.block_rows == 1 ? "nvfp4" : "nvfp4_" + std::to_string(g.block_rows) + "x" + std::to_string(g.block_cols);
  }
  return "?";
}

Granularity granularity_named(std::string_view name, std::string_view what) {
  if (auto g = parse_granularity(name)) return *g;
  throw std::invalid_argument(std::string(what) + ": unknown granularity '" + std::string(name) +
                              "' (one of: tensor row col mx mx32x1 nvfp4 nvfp4_16x1 nvfp4_16x16 block<R>x<C>)");
}

Granularity transposed(const Granularity& g) {
  switch (g.kind) {
    case GranularityKind::kRow: return Granularity::column();
    case GranularityKind::kColumn: return Granularity::row();
    case GranularityKind::kTensor: return g;
    case GranularityKind::kBlock:
    case GranularityKind::kMx:
    case GranularityKind::kNvfp4: return {g.kind, g.block_cols, g.block_rows};
  }
  return g;
}

}  // namespace fp8q
