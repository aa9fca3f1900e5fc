// Saver: saves variables to a safetensors checkpoint and restores them (TF1's
// tf.train.Saver, with safetensors.h as the file format).
//
// At construction the Saver builds its restore graph under the name scope "save":
// one Placeholder of each variable's dtype and shape, one Assign of it to the
// variable, and one op "save/restore_all" grouping the assigns. Building errors
// are recorded in the scope, as every builder does, and make Save and Restore
// fail with them. Save fetches every variable's value in one Run (fetched tensors
// never alias the variables) and writes them under the variables' full names
// ("dense/kernel", "dense/kernel/Momentum", "global_step"). Restore validates the
// whole file against every variable before it assigns anything, then assigns all
// of them in one Run: a restore either changes every variable or none. Every
// file it writes carries a CRC32C per tensor (safetensors.h's checksums), which
// every read verifies: a flipped byte is DataLoss, not silently wrong weights.
//
// The Saver holds only graph handles; the graph owns the nodes. Save and Restore
// are as thread-safe as Session::Run; a training step running concurrently with
// Save may be partly seen, as in TF.
#ifndef TOWERFLOW_TRAIN_SAVER_H_
#define TOWERFLOW_TRAIN_SAVER_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <map>
#include <string>
#include <vector>

#include "towerflow/graph/ops/state_ops.h"
#include "towerflow/graph/scope.h"
#include "towerflow/runtime/session.h"
#include "towerflow/train/safetensors.h"

namespace tw::train {

class Saver {
 public:
  // Saves `vars`, default GlobalVariables(graph) (every variable, optimizer slots
  // and global_step included). Records in `scope` InvalidArgument when there is no
  // variable to save or two share a name.
  explicit Saver(const Scope& scope, std::vector<Variable> vars = {});
  // Saves each variable under the name paired with it, and restores it from
  // that name (TF's Saver({"name": var}): a pretrained model's weights into
  // variables named otherwise). Records InvalidArgument as above, or when two
  // share a name in the file.
  Saver(const Scope& scope, const std::vector<std::pair<std::string, Variable>>& named);

  // Every variable's current value under its name, in variables() order, from
  // one Run. Errors: the building error; the Run's (FailedPrecondition naming
  // an uninitialized variable).
  StatusOr<std::vector<std::pair<std::string, Tensor>>> Fetch(Session& session) const;

  // Writes `tensors` (from Fetch) to `path` (WriteSafetensors: crash-safe) with
  // `metadata` and a checksum per tensor. WriteSafetensors' errors.
  static Status Write(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata);

  // Fetch, then Write to `path`.
  Status Save(Session& session, const std::string& path,
              const std::map<std::string, std::string>& metadata = {}) const;

  // Reads `path` (ReadSafetensors: DataLoss naming the file when corrupt) and
  // restores every variable from it, as RestoreFrom.
  Status Restore(Session& session, const std::string& path) const;

  // Restores every variable from `file`, already read from `path` (named in
  // errors). Before anything is assigned: NotFound naming the variable and the
  // file when the file lacks a variable; InvalidArgument naming the variable, the
  // file and both dtypes or shapes when they differ. Tensors of the file that no
  // variable names are ignored.
  Status RestoreFrom(Session& session, const SafetensorsFile& file, const std::string& path) const;

  const std::vector<Variable>& variables() const { return vars_; }
  // The name of each variable in the file, in variables() order.
  const std::vector<std::string>& keys() const { return keys_; }
  // "save/restore_all": runs every assign (feeding every placeholder is required).
  Node* restore_op() const { return restore_op_; }

 private:
  // The file's tensor for each variable, in vars_ order, after checking that
  // every one is present with the variable's dtype and shape.
  StatusOr<std::vector<const Tensor*>> MatchFile(const SafetensorsFile& file, const std::string& path) const;

  // Builds the restore graph (both constructors).
  void Build(const Scope& scope);

  std::vector<Variable> vars_;
  std::vector<std::string> keys_;     // the file's name of each variable, same order
  std::vector<Output> placeholders_;  // one per variable, same order
  Node* restore_op_ = nullptr;
  Status build_status_;  // what failed while building, if anything
};

}  // namespace tw::train

#pragma GCC visibility pop

#endif  // TOWERFLOW_TRAIN_SAVER_H_
