// How `towerflow train` takes SIGINT and SIGTERM (Ctrl-C, `timeout`,
// mpirun's). They are blocked first thing, so every thread the process starts
// (the pools, the input's, MPI's, CUDA's) inherits the mask, and one thread
// takes them with sigwait: a signal never interrupts a compute thread.
// (Delivered to the main thread inside oneDNN's matmul, a SIGINT crashed 3
// runs of 20 with SIGSEGV, whatever its handler did.) The handler stays
// installed for threads a library started before main.
// Until ArmCleanStop a signal ends the process as by default. Then the first
// sets g_stop_requested (trainer.h), and a second one, a second or more
// later, ends the process at once; sooner, it is the same request delivered
// twice (`timeout` and terminals signal the process and its group).
#ifndef TOWERFLOW_CLI_TRAIN_SIGNALS_H_
#define TOWERFLOW_CLI_TRAIN_SIGNALS_H_

namespace tw::cli {

// Call before any thread starts.
void TakeSignalsOnOneThread();
// From now on the first signal asks for a clean stop (training has started).
void ArmCleanStop();

}  // namespace tw::cli

#endif  // TOWERFLOW_CLI_TRAIN_SIGNALS_H_
