// The Example parsing ops, ParseSingleExample and ParseExample: schemas, CPU
// kernels (over data/example_parser.h) and builders (declared in the public
// data/io_ops.h). Thread-safe: kernels may run for several steps at once.
//
// How the ParseConfig is carried by a node. TF's schemas use lists of mixed
// dtypes (`Tdense`, `sparse_types`), which towerflow's graph does not have: its
// list arguments hold one dtype. So defaults and outputs come in one list per
// feature dtype, in the order float, int64, string, and within a list in config
// order (the builder's config order is the keys sorted, as TF's Python sorts them):
//   attrs   dense_keys    string tensor [Ndense]   sparse_keys  string tensor [Nsparse]
//           Tdense        list(type) [Ndense]      sparse_types list(type) [Nsparse]
//           dense_shape_ranks [Ndense] and dense_shape_dims (all dims, concatenated)
//           Ndense_float, Ndense_int64, Ndense_string: dense features of each dtype
//           Nsparse, Nsparse_float, Nsparse_int64, Nsparse_string: likewise sparse
//   inputs  serialized: string, a scalar (ParseSingleExample) or a vector [B]
//           dense_defaults_{float,int64,string}: one per dense feature of that
//           dtype, shape.num_elements() values (reshaped), or empty: required
//   outputs sparse_indices (Nsparse, int64), sparse_values_{float,int64,string},
//           sparse_shapes (Nsparse, int64), dense_values_{float,int64,string}
// ParseExampleOutputIndex / ParseExampleDefaultIndex compute positions in them.
#ifndef TOWERFLOW_DATA_PARSE_EXAMPLE_OP_H_
#define TOWERFLOW_DATA_PARSE_EXAMPLE_OP_H_

#include <vector>

#include "towerflow/data/example_config.h"
#include "towerflow/data/register.h"

namespace tw {

// A parse node's config as its attrs carry it (no defaults: those are inputs),
// with the position of every feature in its dtype's list.
struct ParseExampleLayout {
  ParseConfig config;
  int num_dense[3] = {0, 0, 0};   // per dtype group: float, int64, string
  int num_sparse[3] = {0, 0, 0};
  std::vector<int> dense_slot;    // position of dense feature d in its dtype's list
  std::vector<int> sparse_slot;   // likewise for sparse features

  int NumSparse() const { return static_cast<int>(config.sparse.size()); }
  // Output positions.
  int SparseIndicesOutput(int s) const { return s; }
  int SparseValuesOutput(int s) const;
  int SparseShapeOutput(int s) const { return 2 * NumSparse() + s; }
  int DenseOutput(int d) const;
  // Input position of dense feature d's default.
  int DenseDefaultInput(int d) const;
};

// 0, 1, 2 for float, int64, string; -1 for any other dtype.
int ParseExampleDtypeGroup(DataType dtype);

// Reads and checks a parse node's attrs: InvalidArgument naming the attr when
// the lists disagree in length, a count attr does not match the dtypes, a dtype
// is not float, int64 or string, or a key repeats.
StatusOr<ParseExampleLayout> ParseExampleLayoutFromAttrs(const AttrMap& attrs);

// Registers both schemas, their CPU kernels and no-gradient marks.
void RegisterParseExampleOps(OpRegistry& ops, KernelRegistry& kernels, GradientRegistry& grads);

}  // namespace tw

#endif  // TOWERFLOW_DATA_PARSE_EXAMPLE_OP_H_
