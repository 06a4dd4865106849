// The CUDA backend's shared libraries (lib/libgptrain_cuda.so: kernels, cuBLAS, cuDNN; lib/libgptrain_nccl.so:
// NCCL communicators), loaded on first use. A CPU run never loads them, so it neither pays for the CUDA
// libraries' start-up (about 0.15 s and 100 MB of page faults per process) nor needs them installed.
#pragma once

namespace gptrain::plugin {

// The address of the extern "C" function `symbol` in lib<library>.so, which is loaded on first use
// (from the executable's ../lib, then its own folder, then the loader's search path). `what` names the
// feature for the messages ("--device cuda"). Throws Error when this build has no such library (no
// CUDA), when it is missing, or when it cannot be loaded (the loader's reason, e.g. a missing libcudnn).
void* symbol(const char* library, const char* symbol, const char* what);

// symbol() as a pointer to F, the declared type of the plugin's function: function<decltype(f)>(...).
template <class F>
F* function(const char* library, const char* name, const char* what) {
  return reinterpret_cast<F*>(symbol(library, name, what));
}

// Whether this build made lib<library>.so (a CUDA build), without loading anything.
bool built();

}  // namespace gptrain::plugin
