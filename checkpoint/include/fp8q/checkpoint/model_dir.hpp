// fp8q/checkpoint/model_dir.hpp: a model checkpoint as Hugging Face stores it, opened for
// reading and validated before anything is quantized.
//
// Two shapes of input are accepted:
//   - one `.safetensors` file;
//   - a directory with `config.json` and either `model.safetensors` or the shards named by
//     `model.safetensors.index.json`:
//       { "metadata": { "total_size": 123, ... },          (optional; scalar values only)
//         "weight_map": { "<tensor name>": "<shard file name>", ... } }
// Nothing in the index is trusted: every shard name must be a plain file name inside the
// directory (no '/', no "..", and no link that resolves outside it, except into the blob
// store of a Hugging Face hub cache: see resolves_into_model), every tensor it names
// must be in that shard and every tensor of a shard must be named for it, and no tensor name
// may appear twice (in the index or across shards). Violations are FormatError naming the
// file, the tensor and the field.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fp8q/checkpoint/safetensors.hpp"

namespace fp8q::checkpoint {

inline constexpr std::string_view kIndexFileName = "model.safetensors.index.json";
inline constexpr std::string_view kSingleFileName = "model.safetensors";
inline constexpr std::string_view kConfigFileName = "config.json";
// Largest config.json / index accepted (a real index of a 600B-parameter model is ~10 MB).
inline constexpr std::uint64_t kMaxIndexBytes = 100'000'000;

// Whether `file` (a file of the model directory `dir`) resolves, links followed, to a place
// inside `dir`, or, when `dir` is a snapshot of a Hugging Face hub cache
// (<cache>/models--<org>--<name>/snapshots/<revision>, whose files are links to
// ../../blobs/<hash>), inside that repository's blobs/ directory.
bool resolves_into_model(const std::filesystem::path& dir, const std::filesystem::path& file);

// The parsed index. weight_map keeps the file's order of first appearance out of it: it is
// sorted by tensor name (std::map), which is also how Transformers writes it.
struct IndexFile {
  std::optional<std::uint64_t> total_size;          // metadata.total_size, when present
  std::map<std::string, std::string> metadata;      // every metadata entry, as JSON text
  std::map<std::string, std::string> weight_map;    // tensor name -> shard file name
  std::vector<std::string> shards() const;          // distinct shard names, sorted
};

// Parses and validates index JSON text (this is the fuzz entry point): UTF-8, JSON syntax,
// the schema above (an object with "weight_map", an object of string values, and an optional
// "metadata" object of scalars; any other key is an error), duplicate keys at any level, and
// every shard name a plain file name. `what` names the file in messages. Throws FormatError.
IndexFile parse_index(std::string_view text, std::string_view what);

// One tensor of the model and the shard that holds it.
struct ModelTensor {
  const TensorInfo* info = nullptr;
  std::size_t shard = 0;  // index into Model::shards()
};

class Model {
 public:
  // `path`: a .safetensors file or a model directory (see above). Throws FormatError for
  // malformed input, std::system_error naming the path for I/O failures.
  static Model open(const std::filesystem::path& path);

  bool is_directory() const { return is_directory_; }
  const std::filesystem::path& path() const { return path_; }
  // config.json's text (directories only; nullopt for a bare .safetensors file). It is
  // checked to be a JSON object.
  const std::optional<std::string>& config_json() const { return config_json_; }
  const std::optional<IndexFile>& index() const { return index_; }
  const std::vector<Reader>& shards() const { return shards_; }
  // Every tensor, ordered by shard (in sorted shard-name order), then by data offset.
  const std::vector<ModelTensor>& tensors() const { return tensors_; }
  const ModelTensor* find(std::string_view name) const;
  std::span<const std::byte> bytes(const ModelTensor& t) const { return shards_[t.shard].bytes(*t.info); }
  // Tells the kernel the pages of `t` are no longer needed by this process (madvise
  // MADV_DONTNEED on the read-only mapping), so resident memory tracks the tensor being
  // processed, not the whole checkpoint. The data stays readable (it is read again from the
  // file if touched).
  void release(const ModelTensor& t) const;
  std::uint64_t total_bytes() const;  // sum of the tensors' byte sizes

 private:
  std::filesystem::path path_;
  bool is_directory_ = false;
  std::optional<std::string> config_json_;
  std::optional<IndexFile> index_;
  std::vector<Reader> shards_;
  std::vector<ModelTensor> tensors_;
  std::map<std::string, std::size_t, std::less<>> by_name_;
};

// Reads a whole small text file (config.json, the index), refusing more than `limit` bytes.
// Throws std::system_error naming the path, FormatError past the limit.
std::string read_text_file(const std::filesystem::path& path, std::uint64_t limit);

}  // namespace fp8q::checkpoint
