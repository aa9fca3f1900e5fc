// towerflow._core: the extension module over libtowerflow.so. Python code
// reaches the engine through this module only (python/towerflow/).
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "bindings.h"
#include "convert.h"
#include "towerflow/data/io_ops.h"

NB_MODULE(_core, m) {
  namespace nb = nanobind;
  using namespace tw::python;
  m.doc() = "towerflow's C++ engine (libtowerflow.so), as the Python package uses it";
  RegisterStatusTranslator();
  // Datasets and sessions hold Python functions (map, flat_map, py_func)
  // from C++, where the garbage collector cannot see the cycles they close
  // through a script's globals: an interpreter that exits with such objects
  // alive frees nothing it would have freed otherwise, and nanobind's
  // warning about "leaked instances" would only alarm the user.
  nb::set_leak_warnings(false);
  // Ops are built by name (add_op): the data module's must be registered
  // before a script's first tf.image.decode_jpeg or queue op.
  tw::io::RegisterDataOps();
  BindGraph(m);
  BindSession(m);
  BindTrain(m);
  BindData(m);
  BindDataset(m);
  BindRecords(m);
  m.def("dtype_name", [](const std::string& name) { return DataTypeToName(DataTypeFromName(name)); },
        nb::arg("name"), "The canonical name of a dtype name (\"float\" -> \"float32\").");
}
