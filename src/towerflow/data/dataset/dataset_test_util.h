// Test helpers for the dataset tests: draining an iterator, int64 scalars
// and vectors as plain values, files of records. Header-only, tests only.
#ifndef TOWERFLOW_DATA_DATASET_DATASET_TEST_UTIL_H_
#define TOWERFLOW_DATA_DATASET_DATASET_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "towerflow/data/dataset.h"
#include "towerflow/data/record_writer.h"

namespace tw::data::testing {

// Every element until OutOfRange; the first other error fails the test.
inline std::vector<Element> Drain(Iterator& it) {
  std::vector<Element> out;
  Element e;
  Status s;
  while ((s = it.GetNext(&e)).ok()) out.push_back(e);
  EXPECT_EQ(s.code(), Code::kOutOfRange) << s.ToString();
  return out;
}

inline std::vector<Element> Drain(const Dataset& d) {
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  auto it = d.MakeIterator();
  EXPECT_TRUE(it.ok()) << it.status().ToString();
  if (!it.ok()) return {};
  return Drain(**it);
}

// Component 0 of every element, an int64 scalar.
inline std::vector<int64_t> Ints(const Dataset& d) {
  std::vector<int64_t> out;
  for (const Element& e : Drain(d)) out.push_back(e[0].scalar<int64_t>());
  return out;
}

inline std::vector<int64_t> Values(const Tensor& t) { return t.ToVector<int64_t>(); }

inline std::vector<int64_t> Seq(int64_t begin, int64_t end) {
  std::vector<int64_t> out;
  for (int64_t i = begin; i < end; ++i) out.push_back(i);
  return out;
}

// A TFRecord file of records "<prefix><i>" for i in [0, n).
inline void WriteRecords(const std::string& path, const std::string& prefix, int n,
                         Compression compression = Compression::kNone) {
  auto w = RecordWriter::Open(path, {.compression = compression});
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  for (int i = 0; i < n; ++i) ASSERT_TRUE((*w)->WriteRecord(prefix + std::to_string(i)).ok());
  ASSERT_TRUE((*w)->Close().ok());
}

inline std::vector<std::string> Strings(const Dataset& d) {
  std::vector<std::string> out;
  for (const Element& e : Drain(d)) out.push_back(e[0].scalar<std::string>());
  return out;
}

}  // namespace tw::data::testing

#endif  // TOWERFLOW_DATA_DATASET_DATASET_TEST_UTIL_H_
