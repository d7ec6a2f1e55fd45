// File input and output for the tool: whole-file reads, and writes that leave nothing
// behind unless they complete (a temporary name in the same folder, renamed at the end).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace fp8q::cli {

// Reads all of `path` ("-" reads standard input). Throws UsageError naming the file.
std::vector<std::byte> read_all(const std::string& path);

// Writes `data` to `path` ("-" writes standard output) through a temporary file beside it,
// renamed into place only once everything is written and fsync'ed; the folder is fsync'ed
// after the rename (checkpoint/durable.hpp). Refuses to overwrite
// `input_path` (the input is never modified).
void write_all_atomically(const std::string& path, const std::vector<std::byte>& data,
                          const std::string& input_path);

}  // namespace fp8q::cli
