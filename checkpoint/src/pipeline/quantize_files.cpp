// quantize_checkpoint()'s last step (pipeline/quantize_steps.hpp): the shard index, config.json
// and the model's other files.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include "fp8q/checkpoint/safetensors.hpp"
#include "pipeline/quantize_steps.hpp"

namespace fp8q::checkpoint::pipeline {
namespace fs = std::filesystem;

namespace {

bool is_weight_file(const fs::path& p) {
  static const std::set<std::string> ext = {".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".h5", ".msgpack", ".gguf", ".onnx"};
  return ext.count(p.extension().string()) != 0;
}

// Copies one of IN's other files into the staging directory, with its permissions. Not
// fs::copy_file: libstdc++ 12 makes one sendfile(2) call and reports a short count as EIO, so
// a disk that filled part way was "Input/output error", never ENOSPC.
void copy_extra_file(const fs::path& from, const fs::path& to) {
  const int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (in < 0 || ::fstat(in, &st) != 0) {
    const int err = errno;
    if (in >= 0) ::close(in);
    throw std::system_error(err, std::generic_category(), "reading " + from.string());
  }
  const int out = ::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  int err = out < 0 ? errno : 0;
  bool reading = false;  // whether `err` is the input's
  std::vector<char> buf(std::size_t{1} << 20);
  for (ssize_t got = 1; err == 0 && got != 0;) {
    got = ::read(in, buf.data(), buf.size());
    if (got < 0) {
      if (errno != EINTR) err = errno, reading = true;
      continue;
    }
    for (ssize_t done = 0; err == 0 && done < got;) {
      const ssize_t w = ::write(out, buf.data() + done, static_cast<std::size_t>(got - done));
      if (w < 0) {
        if (errno != EINTR) err = errno;
        continue;
      }
      done += w;
    }
  }
  if (err == 0 && ::fchmod(out, st.st_mode & 07777) != 0) err = errno;
  ::close(in);
  if (out >= 0 && ::close(out) != 0 && err == 0) err = errno;
  if (err != 0)
    throw std::system_error(err, std::generic_category(), reading ? "reading " + from.string() : "writing " + to.string());
}

}  // namespace

void write_other_files(const Model& model, const fs::path& in, const CheckedOptions& checked, const QuantizePlan& plan,
                       const OJson& index_map, const fs::path& dir, QuantizeResult& result) {
  const Layout* layout = checked.layout;
  const ConfigContext& ctx = plan.ctx;
  const std::vector<Item>& items = plan.items;
  auto write_text = [&](const std::string& name, const std::string& text) {
    std::ofstream f(dir / name, std::ios::binary);
    f << text;
    f.close();
    if (!f) throw std::system_error(errno, std::generic_category(), (dir / name).string() + ": cannot write");
    result.summary.files.push_back(name);
  };
  if (plan.shards.size() > 1) {
    OJson index;
    std::uint64_t data_bytes = 0;
    for (const auto& it : items) data_bytes += it.out_bytes;
    index["metadata"] = {{"total_size", data_bytes}};
    // weight_map sorted by tensor name, as Transformers writes it
    OJson sorted = OJson::object();
    std::map<std::string, std::string> by_name;
    for (auto& [k, v] : index_map.items()) by_name[k] = v.get<std::string>();
    for (auto& [k, v] : by_name) sorted[k] = v;
    index["weight_map"] = sorted;
    write_text(std::string(kIndexFileName), index.dump(2) + "\n");
  }
  OJson config = model.config_json() ? OJson::parse(*model.config_json()) : OJson::object();
  if (layout != nullptr)
    config["quantization_config"] = OJson::parse(layout->quantization_config(ctx));
  else
    config.erase("quantization_config");
  write_text(std::string(kConfigFileName), config.dump(2) + "\n");
  if (model.is_directory()) {
    std::vector<fs::path> extra;
    for (const auto& entry : fs::directory_iterator(in)) {
      const std::string name = entry.path().filename().string();
      // other weights' indexes (pytorch_model.bin.index.json) name files that are not copied
      if (name == kConfigFileName || name.ends_with(".index.json") || name.starts_with(".") || is_weight_file(entry.path()))
        continue;
      if (plan.quantized_input && name == "hf_quant_config.json") continue;
      if (!entry.is_regular_file()) continue;
      if (!resolves_into_model(in, entry.path())) continue;  // a link out of the model: not copied
      extra.push_back(entry.path());
    }
    std::sort(extra.begin(), extra.end());
    for (const auto& p : extra) {
      copy_extra_file(p, dir / p.filename());
      result.summary.files.push_back(p.filename().string());
    }
  }
}

}  // namespace fp8q::checkpoint::pipeline
