// safetensors: dtype table, reader/writer round trips, a byte-exact golden file, and reading
// files laid out the way Python's safetensors writes them.
#include <gtest/gtest.h>

#include <system_error>

#include "safetensors_test_util.hpp"

namespace fp8q::checkpoint {
namespace {

using testing::as_bytes;
using testing::image;
using testing::kAllDTypes;
using testing::pattern_bytes;
using testing::ScratchDir;

// ---- dtypes -------------------------------------------------------------------------------------
TEST(SafetensorsDType, NamesAndSizesFollowTheFormat) {
  struct Row {
    DType dtype;
    const char* name;
    std::size_t bytes;
  };
  const Row rows[] = {{DType::kBool, "BOOL", 1},      {DType::kU8, "U8", 1},       {DType::kI8, "I8", 1},
                      {DType::kF8_E4M3, "F8_E4M3", 1}, {DType::kF8_E5M2, "F8_E5M2", 1},
                      {DType::kF8_E8M0, "F8_E8M0", 1}, {DType::kI16, "I16", 2},     {DType::kU16, "U16", 2},
                      {DType::kF16, "F16", 2},         {DType::kBF16, "BF16", 2},   {DType::kI32, "I32", 4},
                      {DType::kU32, "U32", 4},         {DType::kF32, "F32", 4},     {DType::kF64, "F64", 8},
                      {DType::kI64, "I64", 8},         {DType::kU64, "U64", 8}};
  static_assert(std::size(rows) == kDTypeCount);
  for (const Row& r : rows) {
    EXPECT_EQ(dtype_name(r.dtype), r.name);
    EXPECT_EQ(dtype_bytes(r.dtype), r.bytes) << r.name;
    EXPECT_EQ(parse_dtype(r.name), r.dtype) << r.name;
  }
}

TEST(SafetensorsDType, ParseIsExact) {
  for (const char* bad : {"", "f32", "F32 ", "FLOAT32", "F8_E4M3FN", "F4", "C64", "bf16"}) {
    EXPECT_FALSE(parse_dtype(bad).has_value()) << bad;
  }
  EXPECT_FALSE(parse_dtype(std::string_view("F32\0", 4)).has_value());
  EXPECT_THROW((void)dtype_bytes(static_cast<DType>(200)), std::invalid_argument);
}

TEST(SafetensorsTensorInfo, NumelIsTheProductOfTheShape) {
  TensorInfo t;
  EXPECT_EQ(t.numel(), 1u);  // 0-D: one element
  t.shape = {2, 3, 4};
  EXPECT_EQ(t.numel(), 24u);
  t.shape = {1u << 31, 0, 1u << 31};  // any zero extent gives no elements
  EXPECT_EQ(t.numel(), 0u);
  t.shape = {std::uint64_t{1} << 32, std::uint64_t{1} << 32};
  EXPECT_THROW((void)t.numel(), std::overflow_error);
}

// ---- round trips --------------------------------------------------------------------------------
TEST(SafetensorsRoundTrip, EveryDTypeWithShapesScalarsAndEmptyTensors) {
  ScratchDir dir;
  std::vector<TensorSpec> specs;
  std::vector<std::vector<std::byte>> data;
  unsigned seed = 0;
  for (const DType d : kAllDTypes) {
    const std::string n(dtype_name(d));
    specs.push_back({"t." + n, d, {2, 3}});
    specs.push_back({"scalar." + n, d, {}});
    specs.push_back({"empty." + n, d, {4, 0, 2}});
  }
  for (const TensorSpec& s : specs) {
    std::size_t numel = 1;
    for (auto e : s.shape) numel *= e;
    data.push_back(pattern_bytes(numel * dtype_bytes(s.dtype), ++seed));
  }
  std::vector<TensorData> tensors;
  for (std::size_t i = 0; i < specs.size(); ++i) tensors.push_back({specs[i], data[i]});
  const std::map<std::string, std::string> meta = {{"format", "pt"}, {"fp8q", "round trip \xC3\xA9"}};
  write_file(dir / "all.safetensors", tensors, meta);

  const Reader r(dir / "all.safetensors");
  EXPECT_EQ(r.metadata(), meta);
  EXPECT_EQ(r.header().data_start % 8, 0u) << "the writer pads the header to 8 bytes";
  ASSERT_EQ(r.tensors().size(), specs.size());
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const TensorInfo& t = r.at(specs[i].name);
    EXPECT_EQ(t.dtype, specs[i].dtype) << t.name;
    EXPECT_EQ(t.shape, specs[i].shape) << t.name;
    const auto bytes = r.bytes(t);
    ASSERT_EQ(bytes.size(), data[i].size()) << t.name;
    EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), data[i].begin())) << t.name;
  }
  // tensors() is in file order; the writer lays tensors out in declared order.
  for (std::size_t i = 1; i < r.tensors().size(); ++i) {
    EXPECT_LE(r.tensors()[i - 1].end, r.tensors()[i].begin);
  }
  EXPECT_EQ(r.find("nope"), nullptr);
  EXPECT_EQ(r.find("t.F32"), &r.at("t.F32"));
}

TEST(SafetensorsRoundTrip, StreamingInChunksOfAnySizeAcrossTensors) {
  // Chunks of 1 and 7 bytes (gathered in the writer's buffer), chunks that span tensor
  // boundaries, and a 3 MiB tensor written in pieces larger than the 1 MiB buffer (written
  // straight through) and smaller (buffered).
  ScratchDir dir;
  const std::vector<TensorSpec> specs = {{"small", DType::kF16, {5, 3}},
                                         {"big", DType::kF32, {768, 1024}},
                                         {"tail", DType::kU8, {13}}};
  std::vector<std::byte> all;
  std::vector<std::size_t> sizes;
  unsigned seed = 0;
  for (const auto& s : specs) {
    std::size_t numel = 1;
    for (auto e : s.shape) numel *= e;
    const auto part = pattern_bytes(numel * dtype_bytes(s.dtype), ++seed);
    sizes.push_back(part.size());
    all.insert(all.end(), part.begin(), part.end());
  }
  Writer w(dir / "stream.safetensors", specs, {{"k", "v"}});
  EXPECT_EQ(w.bytes_expected(), all.size());
  const std::size_t chunk_sizes[] = {1, 7, 1, 40, 1500000, 3, 700000, 1 << 20, 65536};
  std::size_t pos = 0, k = 0;
  while (pos < all.size()) {
    const std::size_t n = std::min(chunk_sizes[k++ % std::size(chunk_sizes)], all.size() - pos);
    w.write({all.data() + pos, n});
    pos += n;
    EXPECT_EQ(w.bytes_written(), pos);
  }
  w.commit();

  const Reader r(dir / "stream.safetensors");
  std::size_t off = 0;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const auto bytes = r.bytes(r.at(specs[i].name));
    ASSERT_EQ(bytes.size(), sizes[i]);
    EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), all.begin() + static_cast<std::ptrdiff_t>(off))) << specs[i].name;
    off += sizes[i];
  }
}

TEST(SafetensorsRoundTrip, NoTensorsAtAll) {
  ScratchDir dir;
  write_file(dir / "none.safetensors", {}, {{"only", "metadata"}});
  const Reader r(dir / "none.safetensors");
  EXPECT_TRUE(r.tensors().empty());
  EXPECT_EQ(r.metadata().at("only"), "metadata");
  write_file(dir / "nothing.safetensors", {});
  EXPECT_EQ(testing::read_raw(dir / "nothing.safetensors"), testing::length_field(8) + "{}      ");
}

TEST(SafetensorsRoundTrip, ReaderIsMovable) {
  ScratchDir dir;
  const auto data = pattern_bytes(6, 1);
  const TensorData t[] = {{{"x", DType::kI16, {3}}, data}};
  write_file(dir / "m.safetensors", t);
  Reader a(dir / "m.safetensors");
  Reader b(std::move(a));
  ASSERT_NE(b.find("x"), nullptr);
  EXPECT_EQ(b.bytes(b.at("x"))[5], data[5]);
  Reader c(dir / "m.safetensors");
  c = std::move(b);
  EXPECT_EQ(c.bytes(c.at("x"))[0], data[0]);
  EXPECT_EQ(c.path(), dir / "m.safetensors");
}

// ---- byte-level golden file ---------------------------------------------------------------------
// Declared order b, a, s; nlohmann writes the keys sorted ("__metadata__" < "a" < "b" < "s"
// in byte order) and each entry's fields sorted too. 194 bytes of JSON + 6 spaces = 200
// (0xC8), so the data section starts at 208 = 26 * 8.
TEST(SafetensorsGolden, WriterBytesAreExactlyTheFormat) {
  ScratchDir dir;
  const std::byte b_data[8] = {std::byte{0x00}, std::byte{0x00}, std::byte{0x80}, std::byte{0x3F},   // 1.0f
                               std::byte{0x00}, std::byte{0x00}, std::byte{0x00}, std::byte{0xC0}};  // -2.0f
  const std::byte a_data[3] = {std::byte{1}, std::byte{2}, std::byte{3}};
  const TensorData tensors[] = {{{"b", DType::kF32, {2}}, b_data},
                                {{"a", DType::kU8, {3}}, a_data},
                                {{"s", DType::kBF16, {0}}, {}}};
  write_file(dir / "golden.safetensors", tensors, {{"format", "pt"}});

  const std::string expected_json =
      R"({"__metadata__":{"format":"pt"},)"
      R"("a":{"data_offsets":[8,11],"dtype":"U8","shape":[3]},)"
      R"("b":{"data_offsets":[0,8],"dtype":"F32","shape":[2]},)"
      R"("s":{"data_offsets":[11,11],"dtype":"BF16","shape":[0]}})";
  ASSERT_EQ(expected_json.size(), 194u);
  const std::string expected = std::string("\xC8\0\0\0\0\0\0\0", 8) + expected_json + "      " +
                               std::string("\x00\x00\x80\x3F\x00\x00\x00\xC0", 8) + "\x01\x02\x03";
  EXPECT_EQ(testing::read_raw(dir / "golden.safetensors"), expected);
  EXPECT_EQ(serialize_header(std::vector<TensorSpec>{tensors[0].spec, tensors[1].spec, tensors[2].spec},
                             {{"format", "pt"}}),
            expected.substr(0, 208));
}

// ---- files as Python's safetensors writes them --------------------------------------------------
// Hand-made from the format: compact JSON with "__metadata__" first, tensors laid out in an
// order unrelated to the key order, no padding (older writers), scalar and empty tensors.
TEST(SafetensorsPythonFormat, ReadsAnUnpaddedFileWithAnyKeyOrder) {
  const std::string json =
      R"({"__metadata__":{"format":"pt"},"bias":{"dtype":"F32","shape":[2],"data_offsets":[4,12]},)"
      R"("step":{"dtype":"I32","shape":[],"data_offsets":[0,4]},"ee":{"dtype":"F16","shape":[0,3],)"
      R"("data_offsets":[12,12]},"weight":{"dtype":"BF16","shape":[2,2],"data_offsets":[12,20]}})";
  std::string data;
  data += std::string("\x07\x00\x00\x00", 4);                                    // step = 7
  data += std::string("\x00\x00\x00\x3F\x00\x00\x80\xBF", 8);                     // bias = 0.5, -1
  data += std::string("\x80\x3F\x00\x40\x40\x40\x80\x40", 8);                     // weight = 1,2,3,4 (bf16)
  ASSERT_NE((8 + json.size()) % 8, 0u) << "the case is meant to be unaligned";
  ScratchDir dir;
  testing::write_raw(dir / "py.safetensors", image(json, data));

  const Reader r(dir / "py.safetensors");
  EXPECT_EQ(r.metadata(), (std::map<std::string, std::string>{{"format", "pt"}}));
  ASSERT_EQ(r.tensors().size(), 4u);
  // Sorted by begin, the empty tensor before "weight" which starts at the same offset.
  EXPECT_EQ(r.tensors()[0].name, "step");
  EXPECT_EQ(r.tensors()[1].name, "bias");
  EXPECT_EQ(r.tensors()[2].name, "ee");
  EXPECT_EQ(r.tensors()[3].name, "weight");
  const TensorInfo& step = r.at("step");
  EXPECT_TRUE(step.shape.empty());
  EXPECT_EQ(step.numel(), 1u);
  EXPECT_EQ(std::to_integer<int>(r.bytes(step)[0]), 7);
  const auto w = r.bytes(r.at("weight"));
  EXPECT_EQ(w.size(), 8u);
  EXPECT_EQ(std::to_integer<int>(w[7]), 0x40);  // 4.0 in bf16 is 0x4080
  EXPECT_EQ(r.bytes(r.at("ee")).size(), 0u);
  EXPECT_EQ(r.header().data_start, 8 + json.size());
}

TEST(SafetensorsPythonFormat, AcceptsWhitespaceEscapesAndUnicodeNames) {
  const std::string json =
      "{\n  \"caf\\u00e9\" : { \"shape\" : [ 1 ] , \"data_offsets\" : [ 0 , 2 ] , \"dtype\" : \"F16\" } ,\n"
      "  \"\xE4\xB8\xAD\\n\\\"q\\\"\" : {\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[2,4]},\n"
      "  \"__metadata__\" : { \"\\ud83d\\ude00\" : \"emoji key\" }\n}\n   ";
  const std::string file = image(json, "abcd");
  const Header h = parse_header(as_bytes(file), "ws.safetensors");
  ASSERT_EQ(h.tensors.size(), 2u);
  EXPECT_EQ(h.tensors[0].name, "caf\xC3\xA9");
  EXPECT_EQ(h.tensors[1].name, "\xE4\xB8\xAD\n\"q\"");
  EXPECT_EQ(h.metadata.at("\xF0\x9F\x98\x80"), "emoji key");
}

// ---- reader errors that are about the file, not its contents -----------------------------------
TEST(SafetensorsReader, EmptyFileIsAFormatErrorNamingThePath) {
  ScratchDir dir;
  testing::write_raw(dir / "empty.safetensors", "");
  try {
    Reader r(dir / "empty.safetensors");
    FAIL() << "accepted an empty file";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find((dir / "empty.safetensors").string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("the file is 0 bytes"), std::string::npos) << e.what();
  }
  testing::write_raw(dir / "short.safetensors", "abc");
  EXPECT_THROW(Reader(dir / "short.safetensors"), FormatError);
}

TEST(SafetensorsReader, DirectoryAndMissingFileAreSystemErrorsNamingThePath) {
  ScratchDir dir;
  for (const auto& [path, code] : {std::pair{dir.path(), std::errc::is_a_directory},
                                   std::pair{dir / "missing.safetensors", std::errc::no_such_file_or_directory}}) {
    try {
      Reader r(path);
      FAIL() << "opened " << path;
    } catch (const std::system_error& e) {
      EXPECT_EQ(e.code(), std::make_error_code(code)) << e.what();
      EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
    }
  }
}

TEST(SafetensorsReader, InvalidContentsNameThePathAndTheTensor) {
  ScratchDir dir;
  testing::write_raw(dir / "bad.safetensors", image(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", "abcd"));
  try {
    Reader r(dir / "bad.safetensors");
    FAIL();
  } catch (const FormatError& e) {
    const std::string m = e.what();
    EXPECT_TRUE(m.starts_with((dir / "bad.safetensors").string() + ": tensor \"w\": data_offsets:")) << m;
  }
}

TEST(SafetensorsReader, AtNamesTheMissingTensorAndBytesChecksItsArgument) {
  ScratchDir dir;
  const auto data = pattern_bytes(4, 3);
  const TensorData t[] = {{{"x", DType::kU8, {4}}, data}};
  write_file(dir / "x.safetensors", t);
  const Reader r(dir / "x.safetensors");
  try {
    (void)r.at("y");
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("tensor \"y\": not in the file"), std::string::npos) << e.what();
  }
  TensorInfo foreign = r.at("x");
  foreign.end = 1000;
  EXPECT_THROW((void)r.bytes(foreign), std::out_of_range);
}

}  // namespace
}  // namespace fp8q::checkpoint
