// The parsing op family: DecodeRaw (decode_raw_op.cc) and the Example parsing
// ops ParseSingleExample and ParseExample (parse_example_op.cc).
#include "towerflow/data/decode_raw_op.h"
#include "towerflow/data/parse_example_op.h"
#include "towerflow/data/register.h"

namespace tw {

void RegisterParsingOps(OpRegistry& ops, KernelRegistry& kernels, GradientRegistry& grads) {
  RegisterDecodeRawOp(ops, kernels, grads);
  RegisterParseExampleOps(ops, kernels, grads);
}

}  // namespace tw
