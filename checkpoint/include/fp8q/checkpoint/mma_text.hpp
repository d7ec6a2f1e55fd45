// fp8q/checkpoint/mma_text.hpp: the text format of published tensor-core measurements (one
// dot product per line, three files), as the H100 FP8 vectors of "Accurate Models of NVIDIA
// Tensor Cores" (Khattak and Mikaitis) are written:
//
//   A file: one row of A per line: K fp32 bit patterns in hex, separated by blanks ("3f700000")
//   B file: one column of B per line, the same encoding
//   D file: one result per line: the fp32 bit pattern as 32 binary digits
//   C file (optional; the sets measured with a nonzero accumulator input): one fp32 C per
//   line, encoded as D
//
// Line i of the files is one sample (row i of A, column i of B, C[i][i], D[i][i]); empty lines
// (and a final newline) are skipped; every A and B line has the same K >= 1.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace fp8q::checkpoint {

struct MmaText {
  std::size_t k = 0;
  std::vector<std::uint32_t> a;  // samples x k
  std::vector<std::uint32_t> b;  // samples x k (column i of B is b[i k, (i + 1) k))
  std::vector<std::uint32_t> c;  // samples, or empty: no C file
  std::vector<std::uint32_t> d;  // samples
  std::size_t samples() const { return d.size(); }
};

// Parses the files' contents (C when given); `a_name`, `b_name`, `d_name`, `c_name` name them
// in errors. Throws FormatError (safetensors.hpp) naming the file and the line, and the value
// where one is bad: a token that is not 1 to 8 hex digits, a C or D line that is not 32 binary
// digits, lines of A or B with different numbers of values, files with different numbers of
// lines, no samples. Never reads outside the given text (this is the fuzz entry point).
MmaText parse_mma_text(std::string_view a, std::string_view b, std::string_view d, std::string_view a_name,
                       std::string_view b_name, std::string_view d_name, std::optional<std::string_view> c = {},
                       std::string_view c_name = "C");

}  // namespace fp8q::checkpoint
