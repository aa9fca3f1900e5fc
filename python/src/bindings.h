// The parts of the extension module towerflow._core, one function per
// module of the C++ library, and the helper every builder binding uses.
#ifndef TOWERFLOW_PYTHON_BINDINGS_H_
#define TOWERFLOW_PYTHON_BINDINGS_H_

#include <nanobind/nanobind.h>

#include "convert.h"

namespace tw::python {

void BindGraph(nb::module_& m);    // graph_bindings.cc
void BindSession(nb::module_& m);  // session_bindings.cc
void BindTrain(nb::module_& m);    // train_bindings.cc
void BindData(nb::module_& m);     // data_bindings.cc
void BindDataset(nb::module_& m);  // dataset_bindings.cc
void BindRecords(nb::module_& m);  // record_bindings.cc

// Runs a builder in `scope` and raises the first error it recorded there:
// Python reports a bad node where it is built, as TF1's Python does.
template <typename F>
auto Checked(const Scope& scope, F&& build) -> decltype(build()) {
  size_t before = scope.errors().size();
  auto result = build();
  if (scope.errors().size() > before) {
    // Raised, and so no longer the graph's: a program that catches it goes
    // on building (TF's graph keeps no record of a failed construction).
    Status error = scope.errors()[before];
    scope.ForgetErrors(before);
    throw StatusError(error);
  }
  return result;
}

}  // namespace tw::python

#endif  // TOWERFLOW_PYTHON_BINDINGS_H_
