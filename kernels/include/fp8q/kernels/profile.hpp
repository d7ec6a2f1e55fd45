// fp8q/kernels/profile.hpp: device profiles (docs/numerics.md section 8, "Device profiles"): which formats a chip's matmul
// takes and which accumulation model it computes.
//
// | profile | FP8 formats                     | MX elements              | plain matmul    | MX matmul          | NVFP4 matmul    |
// | trn2    | e4m3 (max 240), e5m2, e3m4      | any, dequantized to bf16 | systolic:128    | bf16 systolic:128  | -               |
// | trn3    | e4m3fn, e4m3 (never mixed), e5m2| e4m3fn, e5m2, e2m1       | systolic:128    | trainium3_mx:wrapx | -               |
// | ocp     | e4m3fn, e5m2                    | every MX element format  | fp32_sequential | exact_block:32     | exact_block:16 (e2m1) |
// | hopper  | e4m3fn, e5m2                    | none                     | fused:32:13:rtz | -                  | -               |
// | fp32    | every element format            | every MX element format  | fp32_sequential | fp32_sequential    | fp32_sequential |
//
// Assumptions (Trainium facts AWS does not document; each a parameter that one measurement
// can correct): the order and precision of the PE array's additions (systolic: sequential
// fp32 over 128 partitions; trainium3_mx: Trainium3MxAssumptions), that FP8 subnormals are
// kept, and the layout (wrapx) whose partitions nc_matmul_mx contracts by default.
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "fp8q/kernels/gemm.hpp"
#include "fp8q/numerics/accumulation.hpp"
#include "fp8q/numerics/format.hpp"

namespace fp8q {

enum class ProfileId : std::uint8_t { kTrn2, kTrn3, kOcp, kHopper, kFp32 };

struct DeviceProfile {
  ProfileId id;
  std::string_view name;
  std::span<const FormatId> formats;      // plain (per-tensor / row / block scaled) operands
  std::span<const FormatId> mx_elements;  // MX operands; empty: the chip has no MX matmul
  bool mixes_e4m3_variants;               // false: e4m3fn and e4m3 never in one matmul
  AccumulationModel plain_model;
  AccumulationModel mx_model;
  bool mx_dequantize_to_bf16;             // MX operands are dequantized to bf16 first (trn2)
  std::span<const FormatId> nvfp4_elements;  // NVFP4 operands; empty: no NVFP4 matmul
  AccumulationModel nvfp4_model;
};

const DeviceProfile& device_profile(ProfileId id);
std::optional<ProfileId> parse_profile(std::string_view name);  // trn2 trn3 ocp hopper fp32

// The options to run args on the profile's chip: its model (or `model_override`), with the
// threads given. Throws std::invalid_argument with the profile, tensor and reason when the
// chip cannot do it (a format it lacks, e4m3fn mixed with e4m3 on trn3, MX on hopper, NVFP4 off ocp and fp32) or the
// arguments are bad.
GemmOptions gemm_options(const DeviceProfile& profile, const GemmArgs& args,
                         std::optional<AccumulationModel> model_override = std::nullopt, int threads = 1);

}  // namespace fp8q
