// Input producers (TF1's tf.train.*_input_producer): a FIFOQueue filled by a
// QueueRunner that enqueues a whole list per step, shuffled per epoch, limited to
// num_epochs by a counting local variable. Plus the two ops they are built from:
// CountUpTo and RandomShuffle.
//
// As in TF: num_epochs needs LocalVariablesInitializer() to run before the
// runners start; after num_epochs passes the enqueue fails with OutOfRange, the
// runner closes the queue, and consumers get OutOfRange once it is drained. The
// runner is added to the graph collection "queue_runners" (StartQueueRunners).
// Builders record errors in the scope and return a null Queue / Output.
// Not thread-safe (graph building).
#ifndef TOWERFLOW_DATA_INPUT_PRODUCERS_H_
#define TOWERFLOW_DATA_INPUT_PRODUCERS_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "towerflow/data/io_ops.h"
#include "towerflow/data/queue_ops.h"
#include "towerflow/graph/ops/state_ops.h"

namespace tw {

// Increments the int32/int64 scalar variable `ref` and outputs its value from
// before; once that value has reached `limit` it fails with OutOfRange "Reached
// limit of <limit>" instead (tf.count_up_to).
Output CountUpTo(const Scope& scope, const Output& ref, int64_t limit);
Output CountUpTo(const Scope& scope, const Variable& var, int64_t limit);
// x with its slices along dimension 0 in a random order, new at every run
// (tf.random_shuffle). `seed` as in random_ops.h.
Output RandomShuffle(const Scope& scope, const Output& x, int64_t seed = 0);

}  // namespace tw

namespace tw::train {

struct InputProducerOptions {
  // Passes over the list before the queue closes; nullopt: forever. Must be > 0.
  std::optional<int64_t> num_epochs = std::nullopt;
  bool shuffle = true;  // a new random order every epoch
  int64_t seed = 0;     // op seed of the shuffle, as in random_ops.h
  int64_t capacity = 32;
  std::string shared_name = "";
};

// tf.train.input_producer: the slices of `input` along dimension 0, whose other
// dimensions must be known. Nodes live under name scope "input_producer"; the
// queue is named exactly that.
io::Queue InputProducer(const Scope& scope, const Output& input, const InputProducerOptions& options = {});
// tf.train.string_input_producer over file names (or any strings). An empty
// list is InvalidArgument "string_input_producer requires a non-null input tensor"
// (TF's text), recorded in the scope; an empty io::Glob names its pattern:
// "string_input_producer: no file matches 'data/*.tfrecord'".
io::Queue StringInputProducer(const Scope& scope, const std::vector<std::string>& strings,
                              const InputProducerOptions& options = {});
io::Queue StringInputProducer(const Scope& scope, const io::FileList& files, const InputProducerOptions& options = {});
// tf.train.range_input_producer: the int32 values 0 .. limit-1.
io::Queue RangeInputProducer(const Scope& scope, int32_t limit, const InputProducerOptions& options = {});

// tf.train.limit_epochs: `tensor`, failing with OutOfRange on the run after
// num_epochs runs. Adds the local variable "<scope>/limit_epochs/epochs".
// nullopt returns `tensor` unchanged; num_epochs <= 0 is InvalidArgument
// "num_epochs must be > 0 not <n>.".
Output LimitEpochs(const Scope& scope, const Output& tensor, std::optional<int64_t> num_epochs);

}  // namespace tw::train

#pragma GCC visibility pop

#endif  // TOWERFLOW_DATA_INPUT_PRODUCERS_H_
