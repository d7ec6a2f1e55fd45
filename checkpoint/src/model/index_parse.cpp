// parse_index(): validation of an untrusted model.safetensors.index.json.
//
// Steps: 1. size and UTF-8; 2. the JSON, walked with nlohmann's SAX interface by a state
// machine that accepts exactly the index schema (it sees every key, so duplicates are caught,
// which a DOM parse would silently merge, and it never nests deeper than two levels);
// 3. each shard name is a plain file name in the model directory.
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "fp8q/checkpoint/model_dir.hpp"
#include "safetensors/text.hpp"

namespace fp8q::checkpoint {
namespace {

using detail::quote;
using Json = nlohmann::json;

// A shard must be a file directly inside the model directory: a name, not a path.
std::optional<std::string> bad_shard_name(std::string_view name) {
  if (name.empty()) return "is empty";
  if (name == "." || name == "..") return "is not a file name";
  if (name.find('/') != std::string_view::npos || name.find('\\') != std::string_view::npos)
    return "is a path, not a file name in the model directory";
  if (name.find('\0') != std::string_view::npos) return "contains a NUL byte";
  return std::nullopt;
}

class IndexSax final : public nlohmann::json_sax<Json> {
 public:
  IndexSax(std::string_view what, IndexFile& out) : what_(what), out_(out) {}
  const std::string& error() const { return error_; }
  bool done() const { return state_ == State::kDone; }
  bool saw_weight_map() const { return saw_weight_map_; }

  bool null() override { return scalar("null"); }
  bool boolean(bool v) override { return scalar(v ? "true" : "false"); }
  bool binary(binary_t&) override { return unexpected("binary data"); }
  bool number_unsigned(number_unsigned_t v) override {
    if (state_ == State::kMetaValue && meta_key_ == "total_size") out_.total_size = v;
    return scalar(std::to_string(v));
  }
  bool number_integer(number_integer_t v) override {
    if (state_ == State::kMetaValue && meta_key_ == "total_size" && v < 0)
      return fail("metadata: total_size is negative (" + std::to_string(v) + ")");
    return scalar(std::to_string(v));
  }
  bool number_float(number_float_t, const string_t& s) override {
    if (state_ == State::kMetaValue && meta_key_ == "total_size")
      return fail("metadata: total_size is not a 64-bit unsigned integer (" + std::string(s.substr(0, 40)) + ")");
    return scalar(s);
  }
  bool string(string_t& s) override {
    if (state_ == State::kMapValue) {
      if (auto why = bad_shard_name(s)) return fail("weight_map: tensor " + quote(map_key_) + ": shard " + quote(s) + " " + *why);
      out_.weight_map.emplace(std::move(map_key_), std::move(s));
      state_ = State::kMapKey;
      return true;
    }
    return scalar(Json(s).dump());
  }

  bool start_object(std::size_t) override {
    switch (state_) {
      case State::kTop: state_ = State::kTopKey; return true;
      case State::kMetaStart: state_ = State::kMetaKey; return true;
      case State::kMapStart: state_ = State::kMapKey; return true;
      default: return unexpected("an object");
    }
  }
  bool key(string_t& k) override {
    switch (state_) {
      case State::kTopKey:
        if (!top_keys_.insert(k).second) return fail("duplicate key " + quote(k));
        if (k == "metadata") {
          state_ = State::kMetaStart;
        } else if (k == "weight_map") {
          saw_weight_map_ = true;
          state_ = State::kMapStart;
        } else {
          return fail("unknown key " + quote(k) + " (an index has \"metadata\" and \"weight_map\")");
        }
        return true;
      case State::kMetaKey:
        if (out_.metadata.count(k) != 0) return fail("metadata: duplicate key " + quote(k));
        meta_key_ = std::move(k);
        state_ = State::kMetaValue;
        return true;
      case State::kMapKey:
        if (out_.weight_map.count(k) != 0) return fail("weight_map: tensor " + quote(k) + " is listed twice");
        map_key_ = std::move(k);
        state_ = State::kMapValue;
        return true;
      default:
        return unexpected("a key");
    }
  }
  bool end_object() override {
    switch (state_) {
      case State::kTopKey: state_ = State::kDone; return true;
      case State::kMetaKey:
      case State::kMapKey: state_ = State::kTopKey; return true;
      default: return unexpected("the end of an object");
    }
  }
  bool start_array(std::size_t) override { return unexpected("an array"); }
  bool end_array() override { return unexpected("the end of an array"); }

  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) override {
    if (error_.empty()) error_ = std::string(what_) + ": not valid JSON at byte " + std::to_string(position) + " (" + e.what() + ")";
    return false;
  }

 private:
  enum class State { kTop, kTopKey, kMetaStart, kMetaKey, kMetaValue, kMapStart, kMapKey, kMapValue, kDone };

  bool scalar(const std::string& text) {
    if (state_ == State::kMetaValue) {
      out_.metadata.emplace(std::move(meta_key_), text);
      state_ = State::kMetaKey;
      return true;
    }
    if (state_ == State::kMapValue) return fail("weight_map: tensor " + quote(map_key_) + ": the shard must be a string, got " + text.substr(0, 40));
    return unexpected(text.substr(0, 40));
  }
  bool unexpected(const std::string& what) {
    std::string where;
    switch (state_) {
      case State::kTop: where = "the index must be a JSON object"; break;
      case State::kMetaStart: where = "\"metadata\" must be an object"; break;
      case State::kMapStart: where = "\"weight_map\" must be an object"; break;
      case State::kMetaValue: where = "metadata: " + quote(meta_key_) + " must be a scalar"; break;
      case State::kMapValue: where = "weight_map: tensor " + quote(map_key_) + ": the shard must be a string"; break;
      default: where = "unexpected content"; break;
    }
    return fail(where + ", got " + what);
  }
  bool fail(const std::string& message) {
    if (error_.empty()) error_ = std::string(what_) + ": " + message;
    return false;
  }

  std::string_view what_;
  IndexFile& out_;
  State state_ = State::kTop;
  std::set<std::string> top_keys_;
  std::string meta_key_, map_key_;
  std::string error_;
  bool saw_weight_map_ = false;
};

}  // namespace

std::vector<std::string> IndexFile::shards() const {
  std::set<std::string> s;
  for (const auto& [name, file] : weight_map) s.insert(file);
  return {s.begin(), s.end()};
}

IndexFile parse_index(std::string_view text, std::string_view what) {
  if (text.size() > kMaxIndexBytes)
    throw FormatError(std::string(what) + ": " + std::to_string(text.size()) + " bytes, more than the " +
                      std::to_string(kMaxIndexBytes) + " accepted for an index");
  if (auto bad = detail::first_invalid_utf8(text))
    throw FormatError(std::string(what) + ": not valid UTF-8 at byte " + std::to_string(*bad));
  IndexFile out;
  IndexSax sax(what, out);
  const bool ok = Json::sax_parse(text.begin(), text.end(), &sax, nlohmann::detail::input_format_t::json, true);
  if (!ok || !sax.done()) {
    if (!sax.error().empty()) throw FormatError(sax.error());
    throw FormatError(std::string(what) + ": not a complete JSON object");
  }
  if (!sax.saw_weight_map()) throw FormatError(std::string(what) + ": no \"weight_map\"");
  if (out.weight_map.empty()) throw FormatError(std::string(what) + ": \"weight_map\" names no tensor");
  return out;
}

}  // namespace fp8q::checkpoint
