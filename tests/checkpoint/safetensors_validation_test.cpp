// safetensors: every check of parse_header(), each with the message it must give. Each case
// is a hand-built file image and the pieces its FormatError must contain (the file name
// "f.st" always comes first, then the tensor and the field).
#include <gtest/gtest.h>

#include "safetensors_test_util.hpp"

namespace fp8q::checkpoint {
namespace {

using testing::as_bytes;
using testing::image;
using testing::image_with_data;
using testing::length_field;

struct Case {
  const char* name;
  std::string file;
  std::vector<std::string> expect;  // substrings of the message, in this order
};

// A tensor entry in the JSON: "name":{"dtype":..,"shape":..,"data_offsets":..}.
std::string entry(std::string_view name, std::string_view dtype, std::string_view shape, std::string_view offsets) {
  return "\"" + std::string(name) + "\":{\"dtype\":\"" + std::string(dtype) + "\",\"shape\":" + std::string(shape) +
         ",\"data_offsets\":" + std::string(offsets) + "}";
}
std::string obj(std::string_view inner) { return "{" + std::string(inner) + "}"; }

std::vector<Case> cases() {
  const std::string w8 = entry("w", "F32", "[2]", "[0,8]");  // a valid 8-byte tensor
  std::vector<Case> c = {
      // ---- the length field ----
      {"EmptyFile", "", {"header length: the file is 0 bytes, shorter than the 8-byte length field"}},
      {"SevenBytes", std::string(7, '\0'), {"header length: the file is 7 bytes"}},
      {"LengthBeyondFile", length_field(100) + "{}", {"header length: 100 bytes is beyond the end of the file (2 bytes"}},
      {"LengthAllOnes", std::string(8, '\xFF') + "{}", {"header length: 18446744073709551615 bytes is over the limit"}},
      {"LengthOverLimit", length_field(100'000'001) + "{}", {"header length: 100000001 bytes is over the limit of 100000000"}},
      {"LengthAtLimitButBeyondFile", length_field(100'000'000) + "{}", {"header length: 100000000 bytes is beyond the end"}},
      {"ZeroLength", length_field(0), {"header: invalid JSON"}},
      // ---- UTF-8 (checked before the JSON) ----
      {"OverlongUtf8", image("{\"\xC0\x80\":1}"), {"header: invalid UTF-8 at header byte 2"}},
      {"SurrogateUtf8", image("{\"a\":{},\"\xED\xA0\x80\":1}"), {"header: invalid UTF-8 at header byte 9"}},
      {"AboveU10FFFF", image("{\"\xF4\x90\x80\x80\":1}"), {"invalid UTF-8 at header byte 2"}},
      {"TruncatedUtf8", image("{\"\xE4\xB8"), {"invalid UTF-8 at header byte 2"}},
      {"StrayContinuation", image("{\x80}"), {"invalid UTF-8 at header byte 1"}},
      {"ByteF5", image("\xF5{}"), {"invalid UTF-8 at header byte 0"}},
      // ---- JSON syntax ----
      {"UnterminatedObject", image("{\"a\":"), {"header: invalid JSON (at header byte", "syntax error"}},
      {"TrailingGarbage", image("{} x"), {"header: invalid JSON"}},
      {"TwoValues", image("{}{}"), {"header: invalid JSON"}},
      {"Comment", image("/* c */{}"), {"header: invalid JSON"}},
      {"RawControlCharInString", image(std::string("{\"a\x01\":1}", 8)), {"header: invalid JSON"}},
      {"NulInString", image(std::string("{\"a\0\":1}", 8)), {"header: a NUL byte at header byte 3"}},
      {"LoneSurrogateEscape", image(R"({"\ud800":1})"), {"header: invalid JSON"}},
      {"NumberOverflowsDouble", image(obj(entry("w", "F32", "[1e999]", "[0,4]"))), {"f.st: "}},
      // ---- the top level ----
      {"TopIsArray", image("[]"), {"header: the JSON is an array, expected an object"}},
      {"TopIsString", image("\"x\""), {"header: the JSON is a string, expected an object"}},
      {"TopIsNumber", image("  7  "), {"header: the JSON is a number"}},
      {"TopIsNull", image("null"), {"header: the JSON is null"}},
      {"TopIsBool", image("true"), {"header: the JSON is a boolean"}},
      // ---- duplicate keys ----
      {"DuplicateTensor", image_with_data(obj(w8 + "," + w8), 8), {"tensor \"w\": duplicate name"}},
      {"DuplicateMetadata", image(R"({"__metadata__":{},"__metadata__":{}})"), {"header: duplicate key \"__metadata__\""}},
      {"DuplicateMetadataKey", image(R"({"__metadata__":{"k":"a","k":"b"}})"), {"__metadata__: duplicate key \"k\""}},
      {"DuplicateField", image_with_data(R"({"w":{"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8),
       {"tensor \"w\": dtype: appears twice"}},
      {"DuplicateShape", image_with_data(R"({"w":{"shape":[2],"shape":[2]}})", 8), {"tensor \"w\": shape: appears twice"}},
      {"DuplicateOffsets", image_with_data(R"({"w":{"data_offsets":[0,8],"data_offsets":[0,8]}})", 8),
       {"tensor \"w\": data_offsets: appears twice"}},
      // ---- entries ----
      {"EntryIsArray", image(R"({"w":[1,2]})"), {"tensor \"w\": entry is an array, expected an object"}},
      {"EntryIsNull", image(R"({"w":null})"), {"tensor \"w\": entry is null"}},
      {"EntryIsString", image(R"({"w":"F32"})"), {"tensor \"w\": entry is a string"}},
      {"MissingDtype", image_with_data(R"({"w":{"shape":[2],"data_offsets":[0,8]}})", 8), {"tensor \"w\": dtype: missing"}},
      {"MissingShape", image_with_data(R"({"w":{"dtype":"F32","data_offsets":[0,8]}})", 8), {"tensor \"w\": shape: missing"}},
      {"MissingOffsets", image_with_data(R"({"w":{"dtype":"F32","shape":[2]}})", 8), {"tensor \"w\": data_offsets: missing"}},
      {"EmptyEntry", image(R"({"w":{}})"), {"tensor \"w\": dtype: missing"}},
      {"ExtraField", image_with_data(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"strides":[1]}})", 8),
       {"tensor \"w\": unknown field \"strides\""}},
      {"FieldNameCase", image_with_data(R"({"w":{"DType":"F32"}})", 8), {"tensor \"w\": unknown field \"DType\""}},
      // ---- dtype ----
      {"DtypeIsNumber", image(R"({"w":{"dtype":4}})"), {"tensor \"w\": dtype: is a number, expected a string"}},
      {"DtypeIsNull", image(R"({"w":{"dtype":null}})"), {"tensor \"w\": dtype: is null"}},
      {"DtypeIsArray", image(R"({"w":{"dtype":["F32"]}})"), {"tensor \"w\": dtype: is an array"}},
      {"UnknownDtype", image(obj(entry("w", "F128", "[2]", "[0,8]"))), {"tensor \"w\": dtype: unknown dtype \"F128\""}},
      {"LowercaseDtype", image(obj(entry("w", "f32", "[2]", "[0,8]"))), {"tensor \"w\": dtype: unknown dtype \"f32\""}},
      // ---- shape ----
      {"ShapeIsString", image(obj(entry("w", "F32", "\"2\"", "[0,8]"))), {"tensor \"w\": shape: is a string, expected an array"}},
      {"ShapeIsObject", image(obj(entry("w", "F32", "{}", "[0,8]"))), {"tensor \"w\": shape: is an object"}},
      {"ShapeIsNumber", image(obj(entry("w", "F32", "2", "[0,8]"))), {"tensor \"w\": shape: is a number"}},
      {"ShapeNegative", image(obj(entry("w", "F32", "[2,-1]", "[0,8]"))), {"tensor \"w\": shape[1]: is negative (-1)"}},
      {"ShapeFraction", image(obj(entry("w", "F32", "[2.0]", "[0,8]"))), {"tensor \"w\": shape[0]: is not an integer (2.0)"}},
      {"ShapeExponent", image(obj(entry("w", "F32", "[1,2e0]", "[0,8]"))), {"tensor \"w\": shape[1]: is not an integer (2e0)"}},
      {"ShapeTooLarge", image(obj(entry("w", "F32", "[18446744073709551616]", "[0,8]"))),
       {"tensor \"w\": shape[0]: is too large (18446744073709551616 > 2^64 - 1)"}},
      {"ShapeNested", image(obj(entry("w", "F32", "[[2]]", "[0,8]"))), {"tensor \"w\": shape[0]: is an array, expected a non-negative integer"}},
      {"ShapeItemString", image(obj(entry("w", "F32", "[\"2\"]", "[0,8]"))), {"tensor \"w\": shape[0]: is a string"}},
      {"ShapeItemNull", image(obj(entry("w", "F32", "[1,null]", "[0,8]"))), {"tensor \"w\": shape[1]: is null"}},
      {"ShapeItemBool", image(obj(entry("w", "F32", "[true]", "[0,8]"))), {"tensor \"w\": shape[0]: is a boolean"}},
      {"ShapeProductOverflows", image(obj(entry("w", "U8", "[4294967296,4294967296]", "[0,0]"))),
       {"tensor \"w\": shape: the product of the extents overflows 64 bits"}},
      {"ShapeByteSizeOverflows", image(obj(entry("w", "F32", "[4611686018427387904]", "[0,0]"))),
       {"tensor \"w\": shape: 4611686018427387904 elements of 4 bytes overflow 64 bits"}},
      // ---- data_offsets ----
      {"OffsetsIsNumber", image(obj(entry("w", "F32", "[2]", "8"))), {"tensor \"w\": data_offsets: is a number, expected an array of two"}},
      {"OffsetsIsObject", image(obj(entry("w", "F32", "[2]", "{}"))), {"tensor \"w\": data_offsets: is an object"}},
      {"OffsetsOneEntry", image_with_data(obj(entry("w", "F32", "[2]", "[8]")), 8), {"tensor \"w\": data_offsets: has 1 entries, expected 2"}},
      {"OffsetsNoEntries", image_with_data(obj(entry("w", "F32", "[2]", "[]")), 8), {"tensor \"w\": data_offsets: has 0 entries"}},
      {"OffsetsThreeEntries", image_with_data(obj(entry("w", "F32", "[2]", "[0,8,8]")), 8), {"tensor \"w\": data_offsets: has more than 2 entries"}},
      {"OffsetNegative", image_with_data(obj(entry("w", "F32", "[2]", "[-1,8]")), 8), {"tensor \"w\": data_offsets[0]: is negative (-1)"}},
      {"OffsetFraction", image_with_data(obj(entry("w", "F32", "[2]", "[0,8.5]")), 8), {"tensor \"w\": data_offsets[1]: is not an integer (8.5)"}},
      {"OffsetTooLarge", image_with_data(obj(entry("w", "F32", "[2]", "[0,99999999999999999999]")), 8), {"tensor \"w\": data_offsets[1]: is too large"}},
      {"OffsetString", image_with_data(obj(entry("w", "F32", "[2]", "[\"0\",8]")), 8), {"tensor \"w\": data_offsets[0]: is a string"}},
      {"BeginAfterEnd", image_with_data(obj(entry("w", "F32", "[0]", "[8,4]")), 8), {"tensor \"w\": data_offsets: begin 8 is greater than end 4"}},
      {"EndBeyondData", image_with_data(obj(entry("w", "F32", "[16]", "[0,64]")), 16),
       {"tensor \"w\": data_offsets: end 64 is beyond the data section (16 bytes)"}},
      {"EndBeyondEmptyData", image(obj(entry("w", "U8", "[1]", "[0,1]"))), {"end 1 is beyond the data section (0 bytes)"}},
      {"SizeMismatch", image_with_data(obj(entry("w", "F32", "[2]", "[0,4]")), 4),
       {"tensor \"w\": data_offsets: [0, 4) holds 4 bytes, but 2 elements of F32 need 8"}},
      {"SizeMismatchEmpty", image_with_data(obj(entry("w", "BF16", "[0,3]", "[0,2]")), 2),
       {"tensor \"w\": data_offsets: [0, 2) holds 2 bytes, but 0 elements of BF16 need 0"}},
      // ---- tiling ----
      {"Overlap", image_with_data(obj(entry("a", "F32", "[2]", "[0,8]") + "," + entry("b", "F32", "[2]", "[4,12]")), 12),
       {"tensor \"b\": data_offsets: [4, 12) overlaps tensor \"a\" [0, 8)"}},
      {"SameRange", image_with_data(obj(entry("a", "F32", "[2]", "[0,8]") + "," + entry("b", "U8", "[8]", "[0,8]")), 8),
       {"tensor \"b\": data_offsets: [0, 8) overlaps tensor \"a\" [0, 8)"}},
      {"EmptyInsideAnother", image_with_data(obj(entry("a", "F32", "[2]", "[0,8]") + "," + entry("e", "U8", "[0]", "[4,4]")), 8),
       {"tensor \"e\": data_offsets: [4, 4) overlaps tensor \"a\" [0, 8)"}},
      {"Gap", image_with_data(obj(entry("a", "F32", "[1]", "[0,4]") + "," + entry("b", "F32", "[1]", "[8,12]")), 12),
       {"tensor \"b\": data_offsets: begins at 8, leaving a gap of 4 bytes after tensor \"a\" [0, 4)"}},
      {"GapAtStart", image_with_data(obj(entry("a", "F32", "[1]", "[4,8]")), 8),
       {"tensor \"a\": data_offsets: begins at 4, leaving a gap of 4 bytes at the start of the data section"}},
      {"TrailingBytes", image_with_data(obj(entry("a", "F32", "[1]", "[0,4]")), 6),
       {"data section: 2 trailing bytes after the last tensor, \"a\" [0, 4)"}},
      {"DataWithoutTensors", image_with_data("{}", 3), {"data section: 3 trailing bytes that no tensor covers"}},
      {"OnlyEmptyTensorsButData", image_with_data(obj(entry("e", "U8", "[0]", "[0,0]")), 1), {"data section: 1 trailing bytes that no tensor covers"}},
      // ---- metadata ----
      {"MetadataIsArray", image(R"({"__metadata__":["a"]})"), {"__metadata__: is an array, expected an object of strings"}},
      {"MetadataIsString", image(R"({"__metadata__":"pt"})"), {"__metadata__: is a string"}},
      {"MetadataValueNumber", image(R"({"__metadata__":{"format":"pt","n":1}})"), {"__metadata__: key \"n\": value is a number, expected a string"}},
      {"MetadataValueObject", image(R"({"__metadata__":{"o":{}}})"), {"__metadata__: key \"o\": value is an object"}},
      {"MetadataValueNull", image(R"({"__metadata__":{"z":null}})"), {"__metadata__: key \"z\": value is null"}},
      // ---- names in messages are quoted and escaped ----
      {"ControlCharInName", image(R"({"a\u0001\"b":7})"), {"tensor \"a\\x01\\\"b\": entry is a number"}},
      {"LongNameIsCut", image("{\"" + std::string(500, 'n') + "\":7}"), {"tensor \"" + std::string(120, 'n') + "\"...: entry is a number"}},
  };
  return c;
}

class SafetensorsValidation : public ::testing::TestWithParam<Case> {};

TEST_P(SafetensorsValidation, RejectsWithAMessageNamingFileTensorAndField) {
  const Case& c = GetParam();
  try {
    (void)parse_header(as_bytes(c.file), "f.st");
    FAIL() << "accepted";
  } catch (const FormatError& e) {
    const std::string m = e.what();
    EXPECT_TRUE(m.starts_with("f.st: ")) << m;
    std::size_t at = 0;
    for (const std::string& piece : c.expect) {
      const std::size_t found = m.find(piece, at);
      EXPECT_NE(found, std::string::npos) << "message: " << m << "\nmissing: " << piece;
      if (found != std::string::npos) at = found + piece.size();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, SafetensorsValidation, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

// ---- what is accepted at the edges of the checks -------------------------------------------------
TEST(SafetensorsValidationEdges, EmptyTensorsMaySitAtAnyBoundary) {
  const std::string json = obj(entry("z0", "U8", "[0]", "[0,0]") + "," + entry("a", "F32", "[1]", "[0,4]") + "," +
                               entry("z1", "I64", "[3,0]", "[4,4]") + "," + entry("b", "U8", "[2]", "[4,6]") + "," +
                               entry("z2", "F16", "[0]", "[6,6]"));
  const Header h = parse_header(as_bytes(image_with_data(json, 6)), "f.st");
  std::vector<std::string> order;
  for (const auto& t : h.tensors) order.push_back(t.name);
  EXPECT_EQ(order, (std::vector<std::string>{"z0", "a", "z1", "b", "z2"}));
}

TEST(SafetensorsValidationEdges, ZeroExtentMakesAHugeShapeEmpty) {
  // numel is the mathematical product: 0, whatever the other extents.
  const std::string json = obj(entry("w", "U64", "[18446744073709551615,0,4294967296]", "[0,0]"));
  const Header h = parse_header(as_bytes(image(json)), "f.st");
  EXPECT_EQ(h.tensors.at(0).numel(), 0u);
}

TEST(SafetensorsValidationEdges, LargestShapeEntryIsAccepted) {
  const std::string json = obj(entry("w", "U8", "[18446744073709551615,0]", "[0,0]") + "," +
                               entry("m", "U8", "[-0]", "[0,0]"));  // "-0" is the integer 0
  EXPECT_NO_THROW((void)parse_header(as_bytes(image(json)), "f.st"));
}

TEST(SafetensorsValidationEdges, EmptyHeaderObjectAndMetadataOnly) {
  EXPECT_TRUE(parse_header(as_bytes(image("{}")), "f.st").tensors.empty());
  const Header h = parse_header(as_bytes(image(R"( {"__metadata__":{}} )")), "f.st");
  EXPECT_TRUE(h.metadata.empty());
}

TEST(SafetensorsValidationEdges, HeaderAtTheLimitIsParsed) {
  // A header of exactly kMaxHeaderBytes passes the length check (and is then parsed): "{}"
  // followed by spaces.
  std::string file = length_field(kMaxHeaderBytes) + "{}";
  file.resize(8 + kMaxHeaderBytes, ' ');
  EXPECT_TRUE(parse_header(as_bytes(file), "f.st").tensors.empty());
}

}  // namespace
}  // namespace fp8q::checkpoint
