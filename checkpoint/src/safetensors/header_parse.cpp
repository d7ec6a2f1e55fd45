// parse_header(): validation of an untrusted safetensors file image.
//
// Steps: 1. the 8-byte length field and its bounds; 2. UTF-8; 3. the JSON, walked with
// nlohmann's SAX interface by a state machine that accepts exactly the safetensors schema
// (it sees every key, so duplicate keys are caught, which a DOM parse would silently merge,
// and it never nests deeper than three levels whatever the input); 4. each tensor's sizes
// and offsets; 5. the tensors tile the data section exactly.
#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_set>

#include "fp8q/checkpoint/safetensors.hpp"
#include "safetensors/text.hpp"

namespace fp8q::checkpoint {
namespace {

using detail::quote;
using Json = nlohmann::json;

constexpr std::string_view kMetadataKey = "__metadata__";

// Numeric text from the JSON, shortened for a message.
std::string shorten(std::string_view s) {
  return s.size() <= 40 ? std::string(s) : std::string(s.substr(0, 40)) + "...";
}

// ---- step 3: the JSON schema as a state machine ----------------------------------------------
class HeaderSax final : public nlohmann::json_sax<Json> {
 public:
  HeaderSax(std::string_view what, std::uint64_t data_size, Header& out)
      : what_(what), data_size_(data_size), out_(out) {}

  const std::string& error() const { return error_; }
  bool done() const { return state_ == State::kDone; }

  // -- values --
  bool null() override { return unexpected("null"); }
  bool boolean(bool) override { return unexpected("a boolean"); }
  bool binary(binary_t&) override { return unexpected("binary data"); }

  bool number_unsigned(number_unsigned_t v) override {
    if (state_ == State::kShapeItem) {
      current_.shape.push_back(v);
      return true;
    }
    if (state_ == State::kOffsetsItem) return offset_item(v);
    return unexpected("a number");
  }
  // nlohmann reports a number written with a leading '-' here (and "-0" as 0).
  bool number_integer(number_integer_t v) override {
    if (v >= 0) return number_unsigned(static_cast<number_unsigned_t>(v));
    if (in_item()) return fail_item("is negative (" + std::to_string(v) + ")");
    return unexpected("a number");
  }
  // A fraction or exponent, or an integer beyond 2^64 - 1 (which nlohmann hands over as a
  // double, with its text in `s`).
  bool number_float(number_float_t, const string_t& s) override {
    if (!in_item()) return unexpected("a number");
    if (s.find_first_of(".eE") == string_t::npos) return fail_item("is too large (" + shorten(s) + " > 2^64 - 1)");
    return fail_item("is not an integer (" + shorten(s) + ")");
  }

  bool string(string_t& s) override {
    switch (state_) {
      case State::kDtype: {
        const auto dtype = parse_dtype(s);
        if (!dtype) return fail_tensor("dtype", "unknown dtype " + quote(s));
        current_.dtype = *dtype;
        state_ = State::kField;
        return true;
      }
      case State::kMetaValue:
        out_.metadata.emplace(std::move(meta_key_), std::move(s));
        state_ = State::kMetaKey;
        return true;
      default:
        return unexpected("a string");
    }
  }

  // -- containers --
  bool start_object(std::size_t) override {
    switch (state_) {
      case State::kTop: state_ = State::kTopKey; return true;
      case State::kEntry: state_ = State::kField; return true;
      case State::kMetaObject: state_ = State::kMetaKey; return true;
      default: return unexpected("an object");
    }
  }

  bool key(string_t& k) override {
    switch (state_) {
      case State::kTopKey:
        if (!top_keys_.insert(k).second) {
          return fail(k == kMetadataKey ? "header: duplicate key \"__metadata__\""
                                        : "tensor " + quote(k) + ": duplicate name (the header has this key twice)");
        }
        if (k == kMetadataKey) {
          state_ = State::kMetaObject;
        } else {
          current_ = TensorInfo{};
          current_.name = std::move(k);
          have_dtype_ = have_shape_ = have_offsets_ = false;
          state_ = State::kEntry;
        }
        return true;
      case State::kField:
        return field_key(k);
      case State::kMetaKey:
        if (out_.metadata.count(k) != 0) return fail("__metadata__: duplicate key " + quote(k));
        meta_key_ = std::move(k);
        state_ = State::kMetaValue;
        return true;
      default:
        return unexpected("a key");  // unreachable: the parser only reports keys inside objects
    }
  }

  bool end_object() override {
    switch (state_) {
      case State::kTopKey: state_ = State::kDone; return true;
      case State::kField: return finish_tensor();
      case State::kMetaKey: state_ = State::kTopKey; return true;
      default: return unexpected("the end of an object");  // unreachable
    }
  }

  bool start_array(std::size_t) override {
    switch (state_) {
      case State::kShapeStart: state_ = State::kShapeItem; return true;
      case State::kOffsetsStart: state_ = State::kOffsetsItem; offsets_seen_ = 0; return true;
      default: return unexpected("an array");
    }
  }

  bool end_array() override {
    switch (state_) {
      case State::kShapeItem: state_ = State::kField; return true;
      case State::kOffsetsItem:
        if (offsets_seen_ != 2) {
          return fail_tensor("data_offsets", "has " + std::to_string(offsets_seen_) + " entries, expected 2 (begin, end)");
        }
        state_ = State::kField;
        return true;
      default: return unexpected("the end of an array");  // unreachable
    }
  }

  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) override {
    // ex.what() is "[json.exception.parse_error.101] parse error at line 1, column 7: ...".
    std::string_view msg = ex.what();
    if (const auto close = msg.find("] "); msg.starts_with("[json.exception.") && close != msg.npos) {
      msg.remove_prefix(close + 2);
    }
    std::string text(msg.substr(0, 300));
    if (msg.size() > 300) text += "...";
    return fail("header: invalid JSON (at header byte " + std::to_string(position) + "): " + text);
  }

 private:
  enum class State {
    kTop,          // the whole JSON value: must be an object
    kTopKey,       // inside it: a tensor name, "__metadata__" or the end
    kEntry,        // a tensor's value: must be an object
    kField,        // inside a tensor's object: dtype / shape / data_offsets or the end
    kDtype,        // the dtype's value: a string
    kShapeStart,   // the shape's value: an array
    kShapeItem,    // inside the shape: integers or the end
    kOffsetsStart, // data_offsets' value: an array
    kOffsetsItem,  // inside data_offsets: two integers, then the end
    kMetaObject,   // __metadata__'s value: an object
    kMetaKey,      // inside it: a key or the end
    kMetaValue,    // a metadata value: a string
    kDone,         // after the top-level object
  };

  bool in_item() const { return state_ == State::kShapeItem || state_ == State::kOffsetsItem; }

  bool fail(std::string message) {
    error_ = std::string(what_) + ": " + std::move(message);
    return false;
  }
  bool fail_tensor(std::string_view field, std::string problem) {
    return fail("tensor " + quote(current_.name) + ": " + std::string(field) + ": " + std::move(problem));
  }
  bool fail_item(std::string problem) {
    if (state_ == State::kShapeItem) {
      return fail_tensor("shape[" + std::to_string(current_.shape.size()) + "]", std::move(problem));
    }
    return fail_tensor("data_offsets[" + std::to_string(offsets_seen_) + "]", std::move(problem));
  }

  // A value of the wrong kind for the current state.
  bool unexpected(std::string_view found) {
    const std::string f(found);
    switch (state_) {
      case State::kTop: return fail("header: the JSON is " + f + ", expected an object");
      case State::kEntry:
        return fail("tensor " + quote(current_.name) + ": entry is " + f +
                    ", expected an object with dtype, shape and data_offsets");
      case State::kDtype: return fail_tensor("dtype", "is " + f + ", expected a string");
      case State::kShapeStart: return fail_tensor("shape", "is " + f + ", expected an array of integers");
      case State::kShapeItem:
      case State::kOffsetsItem: return fail_item("is " + f + ", expected a non-negative integer");
      case State::kOffsetsStart: return fail_tensor("data_offsets", "is " + f + ", expected an array of two integers");
      case State::kMetaObject: return fail("__metadata__: is " + f + ", expected an object of strings");
      case State::kMetaValue:
        return fail("__metadata__: key " + quote(meta_key_) + ": value is " + f + ", expected a string");
      default: return fail("header: unexpected " + f + " in the JSON");  // unreachable
    }
  }

  bool field_key(const std::string& k) {
    bool* have = nullptr;
    State next = State::kField;
    if (k == "dtype") {
      have = &have_dtype_;
      next = State::kDtype;
    } else if (k == "shape") {
      have = &have_shape_;
      next = State::kShapeStart;
    } else if (k == "data_offsets") {
      have = &have_offsets_;
      next = State::kOffsetsStart;
    } else {
      return fail("tensor " + quote(current_.name) + ": unknown field " + quote(k) +
                  " (expected dtype, shape and data_offsets)");
    }
    if (*have) return fail_tensor(k, "appears twice");
    *have = true;
    state_ = next;
    return true;
  }

  bool offset_item(std::uint64_t v) {
    if (offsets_seen_ >= 2) return fail_tensor("data_offsets", "has more than 2 entries, expected 2 (begin, end)");
    (offsets_seen_ == 0 ? current_.begin : current_.end) = v;
    ++offsets_seen_;
    return true;
  }

  // ---- step 4: one tensor's sizes and offsets ----
  bool finish_tensor() {
    if (!have_dtype_) return fail_tensor("dtype", "missing");
    if (!have_shape_) return fail_tensor("shape", "missing");
    if (!have_offsets_) return fail_tensor("data_offsets", "missing");
    const auto numel = detail::checked_numel(current_.shape);
    if (!numel) return fail_tensor("shape", "the product of the extents overflows 64 bits");
    const std::size_t width = dtype_bytes(current_.dtype);
    const auto bytes = detail::checked_mul(*numel, width);
    if (!bytes) {
      return fail_tensor("shape", std::to_string(*numel) + " elements of " + std::to_string(width) +
                                      " bytes overflow 64 bits");
    }
    const std::uint64_t b = current_.begin, e = current_.end;
    if (b > e) {
      return fail_tensor("data_offsets", "begin " + std::to_string(b) + " is greater than end " + std::to_string(e));
    }
    if (e > data_size_) {
      return fail_tensor("data_offsets", "end " + std::to_string(e) + " is beyond the data section (" +
                                             std::to_string(data_size_) + " bytes)");
    }
    if (e - b != *bytes) {
      return fail_tensor("data_offsets", "[" + std::to_string(b) + ", " + std::to_string(e) + ") holds " +
                                             std::to_string(e - b) + " bytes, but " + std::to_string(*numel) +
                                             " elements of " + std::string(dtype_name(current_.dtype)) +
                                             " need " + std::to_string(*bytes));
    }
    out_.tensors.push_back(std::move(current_));
    current_ = TensorInfo{};
    state_ = State::kTopKey;
    return true;
  }

  std::string_view what_;
  std::uint64_t data_size_;
  Header& out_;
  State state_ = State::kTop;
  std::string error_;
  std::unordered_set<std::string> top_keys_;
  TensorInfo current_;
  bool have_dtype_ = false, have_shape_ = false, have_offsets_ = false;
  int offsets_seen_ = 0;
  std::string meta_key_;
};

// ---- step 5: the tensors tile [0, data_size) ------------------------------------------------
// Sorted by (begin, end), each tensor must start where the previous one ended; an empty
// tensor (begin == end) may sit at any boundary, including the very end.
void check_tiling(std::string_view what, std::vector<TensorInfo>& tensors, std::uint64_t data_size) {
  std::sort(tensors.begin(), tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
    if (a.begin != b.begin) return a.begin < b.begin;
    if (a.end != b.end) return a.end < b.end;
    return a.name < b.name;
  });
  const auto range = [](const TensorInfo& t) {
    return "[" + std::to_string(t.begin) + ", " + std::to_string(t.end) + ")";
  };
  const std::string prefix = std::string(what) + ": ";
  std::uint64_t expected = 0;
  const TensorInfo* prev = nullptr;  // the last non-empty tensor: the one that ends at `expected`
  for (const TensorInfo& t : tensors) {
    if (t.begin < expected) {
      throw FormatError(prefix + "tensor " + quote(t.name) + ": data_offsets: " + range(t) + " overlaps tensor " +
                        quote(prev->name) + " " + range(*prev));
    }
    if (t.begin > expected) {
      throw FormatError(prefix + "tensor " + quote(t.name) + ": data_offsets: begins at " + std::to_string(t.begin) +
                        ", leaving a gap of " + std::to_string(t.begin - expected) + " bytes " +
                        (prev ? "after tensor " + quote(prev->name) + " " + range(*prev)
                              : std::string("at the start of the data section")));
    }
    if (t.end > t.begin) {
      expected = t.end;
      prev = &t;
    }
  }
  if (expected != data_size) {
    throw FormatError(prefix + "data section: " + std::to_string(data_size - expected) + " trailing bytes " +
                      (prev ? "after the last tensor, " + quote(prev->name) + " " + range(*prev)
                            : std::string("that no tensor covers")));
  }
}

}  // namespace

Header parse_header(std::span<const std::byte> file, std::string_view what) {
  const std::string prefix = std::string(what) + ": ";
  // ---- step 1: the length field ----
  if (file.size() < 8) {
    throw FormatError(prefix + "header length: the file is " + std::to_string(file.size()) +
                      " bytes, shorter than the 8-byte length field");
  }
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | std::to_integer<std::uint64_t>(file[static_cast<std::size_t>(i)]);
  // The limit first: a garbage length is reported as such, whatever the file's size.
  if (n > kMaxHeaderBytes) {
    throw FormatError(prefix + "header length: " + std::to_string(n) + " bytes is over the limit of " +
                      std::to_string(kMaxHeaderBytes));
  }
  const std::uint64_t after_length = file.size() - 8;
  if (n > after_length) {
    throw FormatError(prefix + "header length: " + std::to_string(n) + " bytes is beyond the end of the file (" +
                      std::to_string(after_length) + " bytes follow the length field)");
  }
  const std::string_view text(reinterpret_cast<const char*>(file.data()) + 8, static_cast<std::size_t>(n));

  // ---- step 2: UTF-8 ----
  if (const auto bad = detail::first_invalid_utf8(text)) {
    throw FormatError(prefix + "header: invalid UTF-8 at header byte " + std::to_string(*bad));
  }

  // JSON text has no NUL byte (nlohmann's lexer would take one for the end of the input and
  // accept whatever follows it) and no byte-order mark (which it skips; serde_json, the
  // reference reader's parser, refuses both).
  if (const auto nul = text.find('\0'); nul != std::string_view::npos)
    throw FormatError(prefix + "header: a NUL byte at header byte " + std::to_string(nul) + " (not JSON)");
  if (text.starts_with("\xEF\xBB\xBF")) throw FormatError(prefix + "header: starts with a UTF-8 byte-order mark (not JSON)");

  // ---- steps 3 and 4: the JSON, each tensor ----
  Header header;
  header.data_start = 8 + n;
  const std::uint64_t data_size = after_length - n;
  HeaderSax sax(what, data_size, header);
  const bool ok = Json::sax_parse(text.begin(), text.end(), &sax, nlohmann::detail::input_format_t::json,
                                  /*strict=*/true, /*ignore_comments=*/false);
  if (!ok || !sax.done()) {
    throw FormatError(sax.error().empty() ? prefix + "header: invalid JSON" : sax.error());
  }

  // ---- step 5: tiling ----
  check_tiling(what, header.tensors, data_size);
  return header;
}

}  // namespace fp8q::checkpoint
