#pragma once
// cuBLASLt and cuDNN, loaded with dlopen on first use (toolkit_library.hpp says where they are
// looked for: the toolkit's, else the ones a PyTorch install brings). Plans' library steps run
// through these tables in the runner; `kagent doctor` loads them to say which versions it found.
// Nothing here needs a GPU: loading a library and asking its version do not create a context.
#include <cublasLt.h>
// cuDNN's headers come with cuDNN, not always with the toolkit: CMake adds the folder where it
// found cudnn.h (the toolkit, /usr/include, a PyTorch install's nvidia/cudnn/include). Without
// them kagent builds, and convolution steps say they are unavailable.
#if __has_include(<cudnn.h>)
#include <cudnn.h>
#define KAGENT_HAVE_CUDNN 1
#else
#define KAGENT_HAVE_CUDNN 0
#endif

#include <string>

namespace kagent {

#define KAGENT_CUBLASLT_FUNCTIONS(X)                                                                                   \
  X(cublasLtCreate)                                                                                                    \
  X(cublasLtDestroy)                                                                                                   \
  X(cublasLtGetVersion) X(cublasLtMatmulDescCreate) X(cublasLtMatmulDescDestroy) X(cublasLtMatmulDescSetAttribute)     \
      X(cublasLtMatrixLayoutCreate) X(cublasLtMatrixLayoutDestroy) X(cublasLtMatrixLayoutSetAttribute)                 \
          X(cublasLtMatmulPreferenceCreate) X(cublasLtMatmulPreferenceDestroy) X(cublasLtMatmulPreferenceSetAttribute) \
              X(cublasLtMatmulAlgoGetHeuristic) X(cublasLtMatmul)

#define KAGENT_CUDNN_FUNCTIONS(X)                                                                                      \
  X(cudnnCreate)                                                                                                       \
  X(cudnnDestroy)                                                                                                      \
  X(cudnnSetStream) X(cudnnGetVersion) X(cudnnGetErrorString) X(cudnnCreateTensorDescriptor)                           \
      X(cudnnSetTensorNdDescriptor) X(cudnnDestroyTensorDescriptor) X(cudnnCreateFilterDescriptor)                     \
          X(cudnnSetFilterNdDescriptor) X(cudnnDestroyFilterDescriptor) X(cudnnCreateConvolutionDescriptor)            \
              X(cudnnSetConvolutionNdDescriptor) X(cudnnSetConvolutionGroupCount) X(cudnnSetConvolutionMathType)       \
                  X(cudnnDestroyConvolutionDescriptor) X(cudnnGetConvolutionForwardAlgorithm_v7)                       \
                      X(cudnnGetConvolutionForwardWorkspaceSize) X(cudnnConvolutionForward)                            \
                          X(cudnnGetConvolutionBackwardDataAlgorithm_v7)                                               \
                              X(cudnnGetConvolutionBackwardDataWorkspaceSize) X(cudnnConvolutionBackwardData)          \
                                  X(cudnnAddTensor) X(cudnnCreateActivationDescriptor) X(cudnnSetActivationDescriptor) \
                                      X(cudnnDestroyActivationDescriptor) X(cudnnActivationForward)                    \
                                          X(cudnnFindConvolutionForwardAlgorithmEx)                                    \
                                              X(cudnnFindConvolutionBackwardDataAlgorithmEx)

struct CublasLtApi {
#define KAGENT_LIBRARY_SLOT(name) decltype(&::name) name = nullptr;
  KAGENT_CUBLASLT_FUNCTIONS(KAGENT_LIBRARY_SLOT)
  std::string path;  // where it was loaded from
};

struct CudnnApi {
#if KAGENT_HAVE_CUDNN
  KAGENT_CUDNN_FUNCTIONS(KAGENT_LIBRARY_SLOT)
#endif
  std::string path;
};
#undef KAGENT_LIBRARY_SLOT

// The loaded library, or nullptr with *why (not found, where it was looked for; a symbol missing).
// Loaded once per process; a failure is not retried.
const CublasLtApi* load_cublaslt(std::string* why);
const CudnnApi* load_cudnn(std::string* why);

// "cuBLASLt 13.0.2 (/usr/local/cuda/lib64/libcublasLt.so.13)", for doctor and reports.
std::string cublaslt_description(const CublasLtApi& api);
std::string cudnn_description(const CudnnApi& api);

}  // namespace kagent
