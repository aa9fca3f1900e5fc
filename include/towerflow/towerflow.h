// The public umbrella header: #include <towerflow/towerflow.h> gives the whole
// user-facing API (tensors and statuses, graph building with every op family,
// the input pipeline, sessions, optimizers, towers, checkpoints, multi-process
// jobs). Link towerflow::towerflow (CMake) or `pkg-config --libs towerflow`.
// Every header it includes lives in include/towerflow/ and includes only
// headers from there: the internals (registries, kernels, the executor, the
// placer, devices) are not installed, and user code never needs them.
#ifndef TOWERFLOW_TOWERFLOW_H_
#define TOWERFLOW_TOWERFLOW_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

// core: values
#include "towerflow/core/session_options.h"
#include "towerflow/core/status.h"
#include "towerflow/core/tensor.h"
#include "towerflow/core/tensor_shape.h"
#include "towerflow/core/threadpool.h"
#include "towerflow/core/types.h"

// data: the input pipeline (readers, parsing, queues, batching), TFRecord files
#include "towerflow/data/batching.h"
#include "towerflow/data/coordinator.h"
#include "towerflow/data/dataset.h"
#include "towerflow/data/example_builder.h"
#include "towerflow/data/image_codec_ops.h"
#include "towerflow/data/input_producers.h"
#include "towerflow/data/io_ops.h"
#include "towerflow/data/iterator_ops.h"
#include "towerflow/data/queue_ops.h"
#include "towerflow/data/queue_runner.h"
#include "towerflow/data/queue_stats.h"
#include "towerflow/data/record_reader.h"
#include "towerflow/data/record_writer.h"

// graph: building, gradients, op builders
#include "towerflow/graph/gradients.h"
#include "towerflow/graph/graph.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/collective_ops.h"
#include "towerflow/graph/ops/color_ops.h"
#include "towerflow/graph/ops/control_flow_ops.h"
#include "towerflow/graph/ops/gather_ops.h"
#include "towerflow/graph/ops/image_ops.h"
#include "towerflow/graph/ops/layout_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/graph/ops/nn_ops.h"
#include "towerflow/graph/ops/random_ops.h"
#include "towerflow/graph/ops/state_ops.h"
#include "towerflow/graph/ops/training_ops.h"
#include "towerflow/graph/scope.h"

// runtime: running graphs, Chrome traces of their steps
#include "towerflow/runtime/session.h"
#include "towerflow/runtime/step_stats.h"
#include "towerflow/runtime/trace.h"

// train: optimizers, towers (Replicate), all-reduce, checkpoints, TensorBoard
#include "towerflow/train/adagrad.h"
#include "towerflow/train/adam.h"
#include "towerflow/train/all_reduce.h"
#include "towerflow/train/checkpoint_manager.h"
#include "towerflow/train/event_writer.h"
#include "towerflow/train/gradient_descent.h"
#include "towerflow/train/momentum.h"
#include "towerflow/train/optimizer.h"
#include "towerflow/train/replicate.h"
#include "towerflow/train/rmsprop.h"
#include "towerflow/train/safetensors.h"
#include "towerflow/train/saver.h"

// dist: jobs of several processes (mpirun), their collectives and input shards
#include "towerflow/dist/collective_ops.h"
#include "towerflow/dist/consistency.h"
#include "towerflow/dist/launch.h"
#include "towerflow/dist/sharding.h"
#include "towerflow/dist/world.h"

#pragma GCC visibility pop

#endif  // TOWERFLOW_TOWERFLOW_H_
