// Dot-product samples (kernels/fit.hpp) on disk, for `fp8q vectors` and `fp8q fit`.
//
// Safetensors (docs/validation.md): a [M, K] and b [K, N] as codes (F8_E4M3 for
// e4m3fn, F8_E5M2 for e5m2, U8 with __metadata__ fp8q.elem.a / fp8q.elem.b naming any other
// element format; e2m1 two codes per byte as `fp8q matmul` reads them) or as F32 values of the
// format that fp8q.elem.a / fp8q.elem.b names; c [M, N] F32, optional; d [M, N] F32 (or the
// d of another file: a device's output). The samples form (__metadata__ fp8q.layout =
// "samples"), for independent dot products: a [S, K], b [S, K] (row i of b is sample i's column
// of B), c [S], d [S]; DotSamples::diagonal holds it.
// Text: the published tensor-core format (checkpoint/mma_text.hpp): A, B, D and optionally C
// files, A's values of one element format and B's of one (the same or another).
#pragma once

#include <map>
#include <string>

#include "fp8q/kernels/fit.hpp"

namespace fp8q::cli {

// Writes a, b, c (when s has C) and d (when `with_d`) to `path`, atomically: the samples form
// when s is diagonal.
void write_samples(const std::string& path, const DotSamples& s, bool with_d,
                   const std::map<std::string, std::string>& metadata);

// The same arrays as NumPy .npz (npz.hpp): a, b as float32 values, a_codes, b_codes as uint8
// (one code per byte, e2m1 included), c and d as float32.
void write_samples_npz(const std::string& path, const DotSamples& s, bool with_d);

// Reads a, b, optional c from `path`, and d from `d_path` (empty: from `path`). Throws
// UsageError naming the file, the tensor and the field.
DotSamples read_samples(const std::string& path, const std::string& d_path);

// Reads the text files (C when `c_path` is not empty); every A value must be one of
// `format_a`'s and every B value one of `format_b`'s.
DotSamples read_text_samples(const std::string& a_path, const std::string& b_path, const std::string& d_path,
                             const std::string& c_path, FormatId format_a, FormatId format_b);

}  // namespace fp8q::cli
