// The layouts, one per file; layout_named() (registry.cpp) is the one place that picks.
#pragma once

#include "fp8q/checkpoint/layout.hpp"
#include "fp8q/numerics/block_scaled.hpp"

namespace fp8q::checkpoint::layouts {

const Layout& hf_fp8_layout();
const Layout& ct_fp8_layout();
const Layout& ct_mxfp8_layout();
const Layout& ct_mxfp4_layout();
const Layout& ct_nvfp4_layout();
const Layout& trn2_layout();
const Layout& trn3_mx_layout();
const Layout& modelopt_nvfp4_layout();  // read only
const Layout& modelopt_fp8_layout();    // read only
const Layout& gpt_oss_mxfp4_layout();   // read only
const Layout& fbgemm_fp8_layout();      // read only

}  // namespace fp8q::checkpoint::layouts
