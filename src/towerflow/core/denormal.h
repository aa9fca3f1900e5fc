// ScopedFlushDenormal: while alive, the calling thread's floating-point unit
// flushes denormal results to zero and treats denormal inputs as zero (x86 MXCSR
// FTZ and DAZ), restoring the previous mode on destruction.
//
// Denormals make arithmetic up to a hundred times slower, and training produces
// them (momentum buffers and gradients decaying towards zero). TensorFlow flushes
// them in its compute threads; towerflow does the same in its executor and
// intra-op threads. No effect on other architectures. Per thread, no shared state.
#ifndef TOWERFLOW_CORE_DENORMAL_H_
#define TOWERFLOW_CORE_DENORMAL_H_

#if defined(__SSE__)
#include <xmmintrin.h>
#endif

namespace tw {

class ScopedFlushDenormal {
 public:
  ScopedFlushDenormal() {
#if defined(__SSE__)
    saved_ = _mm_getcsr();
    _mm_setcsr(saved_ | kFlushToZero | kDenormalsAreZero);
#endif
  }
  ~ScopedFlushDenormal() {
#if defined(__SSE__)
    _mm_setcsr(saved_);
#endif
  }
  ScopedFlushDenormal(const ScopedFlushDenormal&) = delete;
  ScopedFlushDenormal& operator=(const ScopedFlushDenormal&) = delete;

 private:
  static constexpr unsigned kFlushToZero = 0x8000;
  static constexpr unsigned kDenormalsAreZero = 0x0040;
  unsigned saved_ = 0;
};

}  // namespace tw

#endif  // TOWERFLOW_CORE_DENORMAL_H_
