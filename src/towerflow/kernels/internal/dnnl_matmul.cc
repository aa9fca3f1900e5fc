#include "towerflow/kernels/internal/dnnl_matmul.h"

#include <cstdlib>
#include <cstring>

#if defined(TOWERFLOW_HAVE_DNNL)
#include <array>
#include <map>
#include <oneapi/dnnl/dnnl.hpp>
#endif

#include "towerflow/kernels/internal/dnnl_common.h"

namespace tw::dnnl_matmul {

bool Enabled() { return dnnl_common::EnabledUnless("TOWERFLOW_MATMUL", "openblas"); }

#if defined(TOWERFLOW_HAVE_DNNL)
namespace {

using dnnl::memory;

using dnnl_common::Engine;
using dnnl_common::OneOpenMpThread;

// One shape's primitive and its memory objects (pointed at each call's data);
// `ok` false when oneDNN has no implementation for the shape.
struct Entry {
  bool ok = false;
  dnnl::matmul prim;
  memory a, b, c;
};

using Key = std::array<int64_t, 8>;  // trans_a, trans_b, m, n, k, lda, ldb, ldc

Entry Build(const Key& key) {
  const auto [ta, tb, m, n, k, lda, ldb, ldc] = key;
  Entry e;
  try {
    // Row-major op(A) is m x k: A's strides are {lda, 1}, or {1, lda} when A
    // is stored transposed (k x m); likewise B.
    const memory::desc a_md({m, k}, memory::data_type::f32, ta ? memory::dims{1, lda} : memory::dims{lda, 1});
    const memory::desc b_md({k, n}, memory::data_type::f32, tb ? memory::dims{1, ldb} : memory::dims{ldb, 1});
    const memory::desc c_md({m, n}, memory::data_type::f32, memory::dims{ldc, 1});
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), Engine());
    e.prim = dnnl::matmul(pd);
    e.a = memory(a_md, Engine(), DNNL_MEMORY_NONE);
    e.b = memory(b_md, Engine(), DNNL_MEMORY_NONE);
    e.c = memory(c_md, Engine(), DNNL_MEMORY_NONE);
    e.ok = true;
  } catch (const dnnl::error&) {
    e.ok = false;
  }
  return e;
}

}  // namespace

bool Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
          const float* b, int64_t ldb, float* c, int64_t ldc) {
  thread_local std::map<Key, Entry> cache;
  thread_local dnnl::stream stream(Engine());
  OneOpenMpThread one_thread;
  const Key key{trans_a, trans_b, m, n, k, lda, ldb, ldc};
  auto it = cache.find(key);
  if (it == cache.end()) {
    if (cache.size() >= static_cast<size_t>(kCachedShapesPerThread)) cache.clear();
    it = cache.emplace(key, Build(key)).first;
  }
  Entry& e = it->second;
  if (!e.ok) return false;
  try {
    e.a.set_data_handle(const_cast<float*>(a));
    e.b.set_data_handle(const_cast<float*>(b));
    e.c.set_data_handle(c);
    e.prim.execute(stream, {{DNNL_ARG_SRC, e.a}, {DNNL_ARG_WEIGHTS, e.b}, {DNNL_ARG_DST, e.c}});
    stream.wait();
  } catch (const dnnl::error&) {
    return false;
  }
  return true;
}

#else

bool Gemm(bool, bool, int64_t, int64_t, int64_t, const float*, int64_t, const float*, int64_t, float*, int64_t) {
  return false;
}

#endif

}  // namespace tw::dnnl_matmul
