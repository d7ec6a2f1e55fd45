// torch/src/register.cpp: the fp8q operator library, TORCH_LIBRARY(fp8q, ...). Every op has
// one function (fp8q/torch/ops.hpp) registered for CPU and for Meta: on meta tensors it only
// checks its arguments and returns outputs of the right shapes and dtypes, which is what
// torch.compile's fake tensors trace. seed and offset carry 64-bit values as int64 bits.
#include <torch/library.h>

#include "fp8q/torch/ops.hpp"

TORCH_LIBRARY(fp8q, m) {
  m.def("convert(Tensor x, str to, str from_format='', str rounding='rne', str overflow='saturate', "
        "str nan='error', int seed=0, int offset=0, Tensor? scale=None, str scale_op='multiply') -> Tensor");
  // writes `out` and returns nothing: torch.compile functionalizes a custom op's mutation only then
  m.def("convert_into(Tensor x, str to, str from_format='', str rounding='rne', str overflow='saturate', "
        "str nan='error', int seed=0, int offset=0, Tensor? scale=None, str scale_op='multiply', *, "
        "Tensor(a!) out) -> ()");
  m.def("amax(Tensor x, str granularity='tensor') -> Tensor");
  m.def("hadamard16(Tensor x, int sign_mask=0) -> Tensor");
  m.def("unpack_fp4(Tensor packed) -> Tensor");
  m.def("granularity(str name, bool transposed=False) -> str");
  m.def("recipe(str name, bool stochastic_gradients=False) -> str");
  m.def("recipe_names() -> str[]");
  m.def("recipe_check(str json) -> str");
  m.def("recipe_plan(str json) -> str");
  m.def("cast_check(str json, str role) -> str");
  m.def("scale_from_amax(Tensor amax, str format, str scale_op='multiply', int margin=0, float amax_epsilon=0.0, "
        "bool power_of_two=False) -> Tensor");
  m.def("cast_transpose(Tensor x, str to, Tensor? scale=None, str rounding='rne', str overflow='saturate', "
        "str nan='error', int seed=0, int offset=0) -> (Tensor, Tensor, Tensor)");
  m.def("quantize(Tensor x, str format, str granularity='tensor', str scale_op='multiply', int margin=0, "
        "float amax_epsilon=0.0, bool power_of_two=False, str mx_rule='floor', str rounding='rne', "
        "str overflow='saturate', str nan='error', int seed=0, int offset=0, str like='fp8q') -> (Tensor, Tensor)");
  m.def("quantize_nvfp4(Tensor x, str format='e2m1', str granularity='nvfp4', str scale_op='multiply', "
        "int margin=0, float amax_epsilon=0.0, bool power_of_two=False, str mx_rule='floor', str rounding='rne', "
        "str overflow='saturate', str nan='error', int seed=0, int offset=0, str like='fp8q', float? global_scale=None) "
        "-> (Tensor, Tensor, Tensor)");
  m.def("dequantize(Tensor codes, Tensor scales, str granularity='tensor', str format='', "
        "ScalarType dtype=float, Tensor? global_scale=None, str global_scale_op='divide') -> Tensor");
  m.def("quantize_scaled(Tensor x, str format, Tensor scale, str rounding='rne', int seed=0, int offset=0) "
        "-> (Tensor, Tensor, Tensor)");
  m.def("delayed_update(Tensor history, Tensor scale, Tensor amax, str format, str algorithm='max', int margin=0, "
        "bool power_of_two=False) -> (Tensor, Tensor)");
  m.def("histogram_new(int bins=2048, int tail=256) -> Tensor");
  m.def("histogram_observe(Tensor state, Tensor x) -> Tensor");
  m.def("histogram_merge(Tensor a, Tensor b) -> Tensor");
  m.def("calibrate(Tensor state, str method, str format, float percentile=99.99, int margin=0, "
        "float amax_epsilon=0.0, bool power_of_two=False) -> Tensor");
  m.def("matmul(Tensor a, Tensor b, str profile, str a_format='', str b_format='', str a_granularity='tensor', "
        "Tensor? a_scale=None, str b_granularity='tensor', Tensor? b_scale=None, Tensor? c=None, Tensor? bias=None, "
        "str model='', ScalarType out_dtype=float, bool trainium=False, str c_role='epilogue', "
        "Tensor? a_global_scale=None, Tensor? b_global_scale=None) -> Tensor");
  m.def("nc_matmul(Tensor stationary, Tensor moving, str stationary_format='', str moving_format='', "
        "str perf_mode='none', Tensor? psum=None) -> Tensor");
  m.def("nc_matmul_mx(Tensor stationary, Tensor stationary_scale, Tensor moving, Tensor moving_scale, "
        "str stationary_type, str moving_type, Tensor? psum=None, bool exact_partition_sum=True, "
        "bool single_rounding_add=True) -> Tensor");
  m.def("trn3_pack_codes(Tensor codes, str layout) -> Tensor");
  m.def("trn3_unpack_codes(Tensor onchip, str layout, int k) -> Tensor");
  m.def("trn3_pack_scales(Tensor scales, str layout, int k) -> Tensor");
  m.def("trn3_unpack_scales(Tensor onchip, str layout, int k) -> Tensor");
  m.def("pack_x4(Tensor codes, str type) -> Tensor");
  m.def("unpack_x4(Tensor image, str type) -> Tensor");
  m.def("compare(Tensor actual, Tensor expected, str format='', int ulps=0, int worst=5) -> (Tensor, Tensor, Tensor)");
  // no tensor argument to dispatch on: one kernel for every backend
  m.impl("histogram_new", c10::DispatchKey::CompositeExplicitAutograd, TORCH_FN(fp8q::torch::histogram_new));
  m.impl("granularity", c10::DispatchKey::CompositeExplicitAutograd, TORCH_FN(fp8q::torch::granularity));
  m.impl("recipe_check", c10::DispatchKey::CompositeExplicitAutograd, TORCH_FN(fp8q::torch::recipe_check));
  m.impl("recipe_plan", c10::DispatchKey::CompositeExplicitAutograd, TORCH_FN(fp8q::torch::recipe_plan));
  m.impl("recipe", c10::DispatchKey::CompositeExplicitAutograd, TORCH_FN(fp8q::torch::recipe));
  m.impl("recipe_names", c10::DispatchKey::CompositeExplicitAutograd, TORCH_FN(fp8q::torch::recipe_names));
  m.impl("cast_check", c10::DispatchKey::CompositeExplicitAutograd, TORCH_FN(fp8q::torch::cast_check));
}

namespace {
void register_kernels(torch::Library& m) {
  m.impl("convert", TORCH_FN(fp8q::torch::convert));
  m.impl("convert_into", TORCH_FN(fp8q::torch::convert_into));
  m.impl("amax", TORCH_FN(fp8q::torch::amax));
  m.impl("hadamard16", TORCH_FN(fp8q::torch::hadamard16));
  m.impl("unpack_fp4", TORCH_FN(fp8q::torch::unpack_fp4));
  m.impl("scale_from_amax", TORCH_FN(fp8q::torch::scale_from_amax));
  m.impl("cast_transpose", TORCH_FN(fp8q::torch::cast_transpose));
  m.impl("quantize", TORCH_FN(fp8q::torch::quantize));
  m.impl("quantize_nvfp4", TORCH_FN(fp8q::torch::quantize_nvfp4));
  m.impl("dequantize", TORCH_FN(fp8q::torch::dequantize));
  m.impl("quantize_scaled", TORCH_FN(fp8q::torch::quantize_scaled));
  m.impl("delayed_update", TORCH_FN(fp8q::torch::delayed_update));
  m.impl("histogram_observe", TORCH_FN(fp8q::torch::histogram_observe));
  m.impl("histogram_merge", TORCH_FN(fp8q::torch::histogram_merge));
  m.impl("calibrate", TORCH_FN(fp8q::torch::calibrate));
  m.impl("matmul", TORCH_FN(fp8q::torch::matmul));
  m.impl("nc_matmul", TORCH_FN(fp8q::torch::nc_matmul));
  m.impl("nc_matmul_mx", TORCH_FN(fp8q::torch::nc_matmul_mx));
  m.impl("trn3_pack_codes", TORCH_FN(fp8q::torch::trn3_pack_codes));
  m.impl("trn3_unpack_codes", TORCH_FN(fp8q::torch::trn3_unpack_codes));
  m.impl("trn3_pack_scales", TORCH_FN(fp8q::torch::trn3_pack_scales));
  m.impl("trn3_unpack_scales", TORCH_FN(fp8q::torch::trn3_unpack_scales));
  m.impl("pack_x4", TORCH_FN(fp8q::torch::pack_x4));
  m.impl("unpack_x4", TORCH_FN(fp8q::torch::unpack_x4));
  m.impl("compare", TORCH_FN(fp8q::torch::compare));
}
}  // namespace

TORCH_LIBRARY_IMPL(fp8q, CPU, m) { register_kernels(m); }
TORCH_LIBRARY_IMPL(fp8q, Meta, m) { register_kernels(m); }
