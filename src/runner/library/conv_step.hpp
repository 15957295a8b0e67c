#pragma once
// Convolution steps through cuDNN's convolution API: forward, or backward-data for a transposed
// convolution (ConvTranspose is the gradient of a convolution with respect to its input), grouped
// and dilated, NCW/NCHW/NCDHW; 1-D convolutions run as 2-D ones of height 1. The algorithm comes
// from cuDNN's heuristic once per plan; the bias and ReLU are cuDNN's add-tensor and activation.
#include <memory>
#include <string>

#include "kagent/spec/library_step.hpp"
#include "library_step_runner.hpp"

namespace kagent::runner {

struct ConvPointers {
  CUdeviceptr x = 0, w = 0, y = 0, bias = 0;
};

// Throws PlanError when cuDNN is missing or has no algorithm for the convolution as asked.
std::unique_ptr<LibraryStepRunner> make_conv_runner(const ConvStep& c, const ConvShape& s, const ConvPointers& p,
                                                    const std::string& where);

}  // namespace kagent::runner
