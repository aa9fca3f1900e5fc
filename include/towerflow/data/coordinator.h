// Coordinator: TF1's tf.train.Coordinator. Threads of an input pipeline and the
// training loop share one: any of them may request a stop (with an error), all of
// them poll ShouldStop(), and Join waits for the threads, giving stragglers a grace
// period and returning the first error.
//
// A Coordinator is a handle: copies share one state (threads it started keep it
// alive, so a thread outliving the object it was started from is still safe).
// OutOfRange (the end of the data) counts as a clean stop: RequestStop with it
// records no error, as TF's default clean_stop_exception_types does.
// Thread-safe.
#ifndef TOWERFLOW_DATA_COORDINATOR_H_
#define TOWERFLOW_DATA_COORDINATOR_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "towerflow/core/status.h"

namespace tw::train {

class Coordinator {
 public:
  // `clean_stop_codes`: error codes that stop without being an error.
  explicit Coordinator(std::vector<Code> clean_stop_codes = {Code::kOutOfRange});

  // Asks every thread to stop. The first non-clean error of the first call that
  // stops the coordinator is recorded and returned by Join; later calls change
  // nothing (TF's request_stop).
  void RequestStop(const Status& status = Status::OK());
  bool ShouldStop() const;
  // Blocks until a stop is requested.
  void WaitForStop() const;
  // True when a stop was requested within `timeout`.
  bool WaitForStop(std::chrono::milliseconds timeout) const;
  // Forgets the stop and the recorded error, so the coordinator can be reused.
  void ClearStop();
  // The recorded error; OK when none.
  Status error() const;

  // Starts a thread running `fn`, tracked under `name` (also its pthread name,
  // truncated to 15 characters) so that Join can tell whether it has finished and
  // name it when it has not (TF's register_thread).
  std::thread StartThread(std::string name, std::function<void()> fn);

  // Waits until every thread has finished or a stop is requested; then gives the
  // threads `stop_grace_period` to finish. Joins the finished threads and detaches
  // the others (the caller must keep what they use alive), leaving `threads`
  // empty. Returns the recorded error if any; else, with stragglers, Internal
  // "Coordinator stopped with threads still running: <names>" (only logged when
  // `ignore_live_threads`). Threads not started by StartThread cannot be
  // observed: they are joined (blocking) once the others are done.
  Status Join(std::vector<std::thread>& threads,
              std::chrono::milliseconds stop_grace_period = std::chrono::seconds(120),
              bool ignore_live_threads = false);

 private:
  struct ThreadState {
    std::string name;
    bool done = false;  // guarded by State::mu
  };
  struct State {
    std::vector<Code> clean_stop_codes;
    mutable std::mutex mu;
    mutable std::condition_variable cv;  // stop requested or a thread finished
    bool stop = false;                   // guarded by mu
    bool joined = false;                 // guarded by mu
    Status error;                        // guarded by mu
    std::map<std::thread::id, std::shared_ptr<ThreadState>> threads;  // guarded by mu
  };
  std::shared_ptr<State> state_;
};

}  // namespace tw::train

#pragma GCC visibility pop

#endif  // TOWERFLOW_DATA_COORDINATOR_H_
