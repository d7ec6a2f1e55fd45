// quant/granularity.hpp: the one string form (every name parses back to its granularity, no
// other name parses), the transpose of each granularity, and the MX block shapes.
#include "fp8q/quant/granularity.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "fp8q/quant/quantized_tensor.hpp"

namespace fp8q {
namespace {

const std::vector<Granularity> kAll = {Granularity::tensor(),       Granularity::row(),
                                       Granularity::column(),       Granularity::mx(),
                                       Granularity::mx_column(),    Granularity::block(1, 128),
                                       Granularity::block(128, 128), Granularity::block(128, 1),
                                       Granularity::block(3, 5),    Granularity::nvfp4(),
                                       Granularity::nvfp4_column(), Granularity::nvfp4_2d()};

TEST(Granularity, EveryNameParsesBackToItsGranularity) {
  const std::vector<std::string> names = {"tensor", "row", "col", "mx", "mx32x1", "block1x128", "block128x128",
                                          "block128x1", "block3x5", "nvfp4", "nvfp4_16x1", "nvfp4_16x16"};
  ASSERT_EQ(names.size(), kAll.size());
  for (std::size_t i = 0; i < kAll.size(); ++i) {
    EXPECT_EQ(granularity_name(kAll[i]), names[i]);
    EXPECT_EQ(parse_granularity(names[i]), kAll[i]) << names[i];
    EXPECT_EQ(granularity_named(names[i], "x"), kAll[i]) << names[i];
  }
}

TEST(Granularity, OtherNamesAreRefusedNamingTheArgument) {
  for (const char* bad : {"", "none", "channel", "block", "block128", "blockx1", "block0x4", "block4x0", "mx1x32",
                          "mx16x1", "mx32", "Row", "block1x128 ", "col1", "nvfp4_1x16", "nvfp4_32x32",
                          "nvfp416x16"}) {
    EXPECT_FALSE(parse_granularity(bad).has_value()) << bad;
    try {
      granularity_named(bad, "--granularity");
      ADD_FAILURE() << bad;
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()), std::string("--granularity: unknown granularity '") + bad +
                                           "' (one of: tensor row col mx mx32x1 nvfp4 nvfp4_16x1 nvfp4_16x16 block<R>x<C>)");
    }
  }
}

TEST(Granularity, TransposedSeesTheSameBlocksOnTheTransposedMatrix) {
  EXPECT_EQ(transposed(Granularity::tensor()), Granularity::tensor());
  EXPECT_EQ(transposed(Granularity::row()), Granularity::column());
  EXPECT_EQ(transposed(Granularity::mx()), Granularity::mx_column());
  EXPECT_EQ(transposed(Granularity::nvfp4()), Granularity::nvfp4_column());
  EXPECT_EQ(transposed(Granularity::nvfp4_2d()), Granularity::nvfp4_2d());
  EXPECT_EQ(transposed(Granularity::block(1, 128)), Granularity::block(128, 1));
  const MatrixShape m{70, 300}, mt{300, 70};
  for (const Granularity& g : kAll) {
    EXPECT_EQ(transposed(transposed(g)), g) << granularity_name(g);
    // the grid of the transpose is the transposed grid
    const BlockGrid a = block_grid(g, m), b = block_grid(transposed(g), mt);
    EXPECT_EQ(a.grid_rows(), b.grid_cols()) << granularity_name(g);
    EXPECT_EQ(a.grid_cols(), b.grid_rows()) << granularity_name(g);
  }
}

TEST(Granularity, MxBlocksAre32AlongOneAxis) {
  const BlockGrid along_rows = block_grid(Granularity::mx(), {5, 70}), along_k = block_grid(Granularity::mx_column(), {70, 5});
  EXPECT_EQ(along_rows.grid_rows(), 5u);
  EXPECT_EQ(along_rows.grid_cols(), 3u);
  EXPECT_EQ(along_k.grid_rows(), 3u);
  EXPECT_EQ(along_k.grid_cols(), 5u);
  EXPECT_THROW(block_grid({GranularityKind::kMx, 16, 1}, {4, 4}), std::invalid_argument);
  EXPECT_THROW(block_grid({GranularityKind::kNvfp4, 32, 1}, {4, 4}), std::invalid_argument);
  // quantize runs MX blocks along the last axis only: 32 x 1 is the GEMM's view of B
  const std::vector<float> x(64, 1.0f);
  const std::uint64_t shape[] = {32, 2};
  QuantizeOptions o;
  o.granularity = Granularity::mx_column();
  try {
    quantize(std::as_bytes(std::span(x)), format_of(FormatId::kF32), shape, o);
    ADD_FAILURE();
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "quantize: MX blocks run along the last axis (granularity mx, not mx32x1); quantize the transpose");
  }
}

}  // namespace
}  // namespace fp8q
