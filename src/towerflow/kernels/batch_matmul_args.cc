#include "towerflow/kernels/batch_matmul_args.h"

#include <algorithm>
#include <climits>

namespace tw {

int64_t BatchMatMulPlan::Index(int64_t b, const std::vector<int64_t>& strides) const {
  int64_t index = 0;
  for (size_t i = dims.size(); i-- > 0;) {
    index += (b % dims[i]) * strides[i];
    b /= dims[i];
  }
  return index;
}

bool BatchMatMulPlan::Uniform(int64_t* x_step, int64_t* y_step) const {
  // x's index is b itself when x spans every batch dimension unbroadcast, 0
  // when it spans none; anything else mixes the two.
  auto step = [&](const std::vector<int64_t>& strides, int64_t* out) {
    bool all = true, none = true;
    int64_t expected = 1;
    for (size_t i = dims.size(); i-- > 0;) {
      if (dims[i] == 1) continue;
      all = all && strides[i] == expected;
      none = none && strides[i] == 0;
      expected *= dims[i];
    }
    *out = none ? 0 : 1;
    return all || none;
  };
  return step(x_strides, x_step) && step(y_strides, y_step);
}

StatusOr<BatchMatMulPlan> BatchMatMulOutput(OpKernelContext* ctx, bool adj_x, bool adj_y, Tensor** out) {
  const TensorShape& x = ctx->input(0).shape();
  const TensorShape& y = ctx->input(1).shape();
  auto both = [&] { return StrCat("x has shape ", x.ToString(), adj_x ? " (adjoint)" : "", ", y has shape ",
                                  y.ToString(), adj_y ? " (adjoint)" : ""); };
  if (x.rank() < 2 || y.rank() < 2) {
    return errors::InvalidArgument("BatchMatMul needs inputs of rank >= 2: ", both());
  }
  const int rx = x.rank(), ry = y.rank();
  BatchMatMulPlan p;
  p.m = x.dim(adj_x ? rx - 1 : rx - 2);
  p.k = x.dim(adj_x ? rx - 2 : rx - 1);
  const int64_t ky = y.dim(adj_y ? ry - 1 : ry - 2);
  p.n = y.dim(adj_y ? ry - 2 : ry - 1);
  if (p.k != ky) {
    return errors::InvalidArgument("Matrix size-incompatible: ", both(), ": inner dimensions ", p.k, " vs ", ky);
  }
  if (std::max({x.dim(rx - 1), x.dim(rx - 2), y.dim(ry - 1), y.dim(ry - 2)}) > INT_MAX) {
    return errors::InvalidArgument("BatchMatMul dimensions exceed BLAS's 32-bit range: ", both());
  }
  const int batch = std::max(rx, ry) - 2;
  p.dims.resize(static_cast<size_t>(batch));
  p.x_strides.resize(static_cast<size_t>(batch));
  p.y_strides.resize(static_cast<size_t>(batch));
  std::vector<int64_t> out_dims(static_cast<size_t>(batch) + 2);
  int64_t sx = 1, sy = 1;
  for (int i = batch - 1; i >= 0; --i) {
    const int ix = rx - 2 - batch + i, iy = ry - 2 - batch + i;
    const int64_t dx = ix >= 0 ? x.dim(ix) : 1, dy = iy >= 0 ? y.dim(iy) : 1;
    if (dx != dy && dx != 1 && dy != 1) {
      return errors::InvalidArgument("BatchMatMul batch dimensions do not broadcast: ", both());
    }
    const int64_t d = dx == 1 ? dy : dx;
    const size_t u = static_cast<size_t>(i);
    p.dims[u] = d;
    p.x_strides[u] = dx == 1 ? 0 : sx;
    p.y_strides[u] = dy == 1 ? 0 : sy;
    sx *= dx;
    sy *= dy;
    out_dims[u] = d;
  }
  out_dims[static_cast<size_t>(batch)] = p.m;
  out_dims[static_cast<size_t>(batch) + 1] = p.n;
  TW_ASSIGN_OR_RETURN(TensorShape shape, TensorShape::Make(out_dims));
  p.batches = 1;
  for (int64_t d : p.dims) p.batches *= d;
  TW_RETURN_IF_ERROR(ctx->allocate_output(0, shape, out));
  return p;
}

}  // namespace tw
