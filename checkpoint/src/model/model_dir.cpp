// Model::open(): a .safetensors file or a Hugging Face model directory, every part validated.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <system_error>

#include "fp8q/checkpoint/model_dir.hpp"
#include "safetensors/text.hpp"

namespace fp8q::checkpoint {
namespace fs = std::filesystem;
using detail::quote;

std::string read_text_file(const fs::path& path, std::uint64_t limit) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    throw std::system_error(ec ? ec : std::make_error_code(std::errc::invalid_argument),
                            path.string() + ": not a regular file");
  const auto size = fs::file_size(path, ec);
  if (ec) throw std::system_error(ec, path.string());
  if (size > limit)
    throw FormatError(path.string() + ": " + std::to_string(size) + " bytes, more than the " + std::to_string(limit) +
                      " accepted");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::system_error(errno, std::generic_category(), path.string() + ": cannot open");
  std::string text(size, '\0');
  in.read(text.data(), static_cast<std::streamsize>(size));
  if (in.gcount() != static_cast<std::streamsize>(size))
    throw std::system_error(EIO, std::generic_category(), path.string() + ": short read");
  return text;
}

namespace {

// Whether the canonical path f lies inside the canonical directory d.
bool under(const fs::path& f, const fs::path& d) {
  const auto rel = f.lexically_relative(d);
  return !rel.empty() && *rel.begin() != ".." && !rel.is_absolute();
}

// `file` must resolve into the model (resolves_into_model), so a link in the directory cannot
// make fp8q read something elsewhere.
void check_inside(const fs::path& dir, const fs::path& file, const std::string& what) {
  if (resolves_into_model(dir, file)) return;
  std::error_code ec;
  throw FormatError(what + ": " + quote(file.filename().string()) + " resolves to " +
                    fs::weakly_canonical(file, ec).string() + ", outside the model directory " +
                    fs::canonical(dir, ec).string());
}

}  // namespace

bool resolves_into_model(const fs::path& dir, const fs::path& file) {
  std::error_code ec;
  const fs::path d = fs::canonical(dir, ec);
  if (ec) throw std::system_error(ec, dir.string());
  const fs::path f = fs::weakly_canonical(file, ec);
  if (ec) throw std::system_error(ec, file.string());
  if (under(f, d)) return true;
  // a hub cache snapshot: <repo>/snapshots/<revision>, files linked into <repo>/blobs/
  if (d.parent_path().filename() == "snapshots") {
    const fs::path blobs = d.parent_path().parent_path() / "blobs";
    return fs::is_directory(blobs, ec) && under(f, blobs);
  }
  return false;
}

namespace {

// How deeply arrays and objects nest in a JSON text (brackets inside strings do not count).
// Real model configs nest a few levels; a hostile one nested 100000 deep would exhaust the
// stack of every recursive walk of the parsed document (parse, copy, dump, destruction), and
// its pretty-printed copy grows with the square of the depth.
constexpr int kMaxConfigDepth = 64;

int json_depth(const std::string& text) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      deepest = std::max(deepest, ++depth);
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return deepest;
}

void check_config(const std::string& text, const fs::path& path) {
  if (auto bad = detail::first_invalid_utf8(text))
    throw FormatError(path.string() + ": not valid UTF-8 at byte " + std::to_string(*bad));
  if (const int depth = json_depth(text); depth > kMaxConfigDepth)
    throw FormatError(path.string() + ": arrays and objects nested " + std::to_string(depth) + " deep (at most " +
                      std::to_string(kMaxConfigDepth) + " in a model config)");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw FormatError(path.string() + ": not valid JSON (" + e.what() + ")");
  }
  if (!j.is_object()) throw FormatError(path.string() + ": must be a JSON object");
}

}  // namespace

Model Model::open(const fs::path& path) {
  Model m;
  m.path_ = path;
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (ec) throw std::system_error(ec, path.string());
  if (fs::is_directory(status)) {
    m.is_directory_ = true;
    const fs::path config = path / kConfigFileName;
    if (!fs::exists(config, ec))
      throw FormatError(path.string() + ": a model directory needs config.json (none found)");
    check_inside(path, config, path.string());
    m.config_json_ = read_text_file(config, kMaxIndexBytes);
    check_config(*m.config_json_, config);
    const fs::path index_path = path / kIndexFileName;
    std::vector<std::string> shard_names;
    if (fs::exists(index_path, ec)) {
      check_inside(path, index_path, path.string());
      m.index_ = parse_index(read_text_file(index_path, kMaxIndexBytes), index_path.string());
      shard_names = m.index_->shards();
    } else if (fs::exists(path / kSingleFileName, ec)) {
      shard_names = {std::string(kSingleFileName)};
    } else {
      throw FormatError(path.string() + ": neither model.safetensors nor model.safetensors.index.json found");
    }
    for (const auto& name : shard_names) {
      const fs::path shard = path / name;
      if (m.index_ && !fs::exists(shard, ec)) {
        const auto& map = m.index_->weight_map;
        const auto first = std::find_if(map.begin(), map.end(), [&](const auto& e) { return e.second == name; });
        const auto count = std::count_if(map.begin(), map.end(), [&](const auto& e) { return e.second == name; });
        throw FormatError(index_path.string() + ": shard " + quote(name) + " (tensor " + quote(first->first) +
                          (count > 1 ? " and " + std::to_string(count - 1) + " more" : std::string()) +
                          ") does not exist in " + path.string());
      }
      check_inside(path, shard, m.index_ ? index_path.string() : path.string());
      m.shards_.emplace_back(shard);
    }
  } else {
    m.shards_.emplace_back(path);
  }

  // Every tensor, by shard then offset; names unique across shards; index and shards agree.
  for (std::size_t s = 0; s < m.shards_.size(); ++s) {
    const Reader& r = m.shards_[s];
    const std::string shard_name = r.path().filename().string();
    for (const TensorInfo& t : r.tensors()) {
      if (m.index_) {
        const auto it = m.index_->weight_map.find(t.name);
        if (it == m.index_->weight_map.end())
          throw FormatError(r.path().string() + ": tensor " + quote(t.name) + " is not in the index " +
                            std::string(kIndexFileName));
        if (it->second != shard_name)
          throw FormatError(r.path().string() + ": tensor " + quote(t.name) + " is also here, but the index puts it in " +
                            quote(it->second));
      }
      const auto [pos, fresh] = m.by_name_.emplace(t.name, m.tensors_.size());
      if (!fresh)
        throw FormatError(r.path().string() + ": tensor " + quote(t.name) + " is also in " +
                          m.shards_[m.tensors_[pos->second].shard].path().string() + " (duplicate name)");
      m.tensors_.push_back({&t, s});
    }
  }
  if (m.index_) {
    for (const auto& [name, file] : m.index_->weight_map)
      if (m.by_name_.count(name) == 0)
        throw FormatError((path / kIndexFileName).string() + ": weight_map: tensor " + quote(name) + " is not in " +
                          quote(file));
  }
  return m;
}

const ModelTensor* Model::find(std::string_view name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

void Model::release(const ModelTensor& t) const {
  const auto bytes = this->bytes(t);
  if (bytes.empty()) return;
  static const std::uintptr_t page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  // Only whole pages inside the tensor: its neighbours may still be needed.
  const auto begin = reinterpret_cast<std::uintptr_t>(bytes.data());
  const std::uintptr_t first = (begin + page - 1) / page * page;
  const std::uintptr_t last = (begin + bytes.size()) / page * page;
  if (last > first) (void)madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

std::uint64_t Model::total_bytes() const {
  std::uint64_t n = 0;
  for (const auto& t : tensors_) n += t.info->byte_size();
  return n;
}

}  // namespace fp8q::checkpoint
