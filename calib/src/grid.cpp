#include "grid.hpp"

#include <map>
#include <mutex>
#include <stdexcept>
#include <string>

#include "fp8q/numerics/convert.hpp"

namespace fp8q::calib::detail {

const Grid& grid_of(const Format& f) {
  if (f.bits() > 8 || !f.is_signed || !f.has_zero())
    throw std::invalid_argument("calibration target must be a signed narrow format with a zero (e4m3fn, e4m3, e5m2, ...), got " +
                                std::string(f.name));
  static std::mutex m;
  static std::map<std::string_view, Grid> cache;
  std::lock_guard<std::mutex> lock(m);
  auto [it, fresh] = cache.try_emplace(f.name);
  Grid& g = it->second;
  if (fresh) {
    g.format = &f;
    // magnitude codes 0 .. max_finite_code are exactly the finite non-negative values, ascending
    for (std::uint64_t c = 0; c <= f.max_finite_code(); ++c) g.value.push_back(f.magnitude_value(c));
    for (std::size_t j = 0; j + 1 < g.value.size(); ++j) g.midpoint.push_back((g.value[j] + g.value[j + 1]) / 2);
    for (std::uint64_t c = 0; c < (std::uint64_t{1} << f.bits()); ++c) g.decode[c] = decode_f64(c, f);
  }
  return g;
}

}  // namespace fp8q::calib::detail
