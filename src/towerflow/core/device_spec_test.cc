// DeviceSpec: parsing (TF's C++ and Python forms), canonical strings, matching,
// TF's MergeDevNames and nested-scope overriding.
#include "towerflow/core/device_spec.h"

#include <gtest/gtest.h>

namespace tw {
namespace {

DeviceSpec P(const std::string& s) {
  StatusOr<DeviceSpec> spec = DeviceSpec::Parse(s);
  EXPECT_TRUE(spec.ok()) << s << ": " << spec.status().ToString();
  return spec.ok() ? *spec : DeviceSpec();
}

TEST(DeviceSpecTest, ParsesToCanonicalForm) {
  struct Case {
    const char* in;
    const char* out;
  };
  const Case cases[] = {
      {"", ""},
      {"/", ""},
      {"/cpu:0", "/device:CPU:0"},
      {"/CPU:0", "/device:CPU:0"},
      {"/gpu:1", "/device:GPU:1"},
      {"/GPU:1", "/device:GPU:1"},
      {"gpu:1", "/device:GPU:1"},  // the seed's tf.device('gpu:%d' % i)
      {"/gpu", "/device:GPU:*"},
      {"/gpu:*", "/device:GPU:*"},
      {"/device:GPU:1", "/device:GPU:1"},
      {"/device:GPU", "/device:GPU:*"},
      {"/device:CPU:*", "/device:CPU:*"},
      {"/device:*:1", "/device:*:1"},
      {"/device:cpu:0", "/device:cpu:0"},  // not legacy: the type stays lower case
      {"/job:localhost", "/job:localhost"},
      {"/job:*", ""},
      {"/job:ps/task:1", "/job:ps/task:1"},
      {"/job:localhost/replica:0/task:0/device:CPU:0", "/job:localhost/replica:0/task:0/device:CPU:0"},
      {"/job:worker/replica:2/task:3/gpu:4", "/job:worker/replica:2/task:3/device:GPU:4"},
      {"/task:0/job:w", "/job:w/task:0"},
  };
  for (const Case& c : cases) EXPECT_EQ(P(c.in).ToString(), c.out) << c.in;
}

TEST(DeviceSpecTest, FieldsAndCompleteness) {
  DeviceSpec full = P("/job:localhost/replica:0/task:0/device:GPU:3");
  EXPECT_TRUE(full.IsCompleteSpecification());
  EXPECT_EQ(full.job(), "localhost");
  EXPECT_EQ(full.type(), "GPU");
  EXPECT_EQ(full.id(), 3);
  EXPECT_EQ(full.ShortString(), "/device:GPU:3");
  EXPECT_EQ(full, DeviceSpec::Local("GPU", 3));
  EXPECT_FALSE(P("/device:GPU:3").IsCompleteSpecification());
  EXPECT_FALSE(P("/gpu:*").has_id());
  EXPECT_TRUE(P("").empty());
}

TEST(DeviceSpecTest, RejectsMalformedStrings) {
  const char* bad[] = {"/gpu:x",       "/gpu:-1",        "/device:GPU:1:2", "/job:1abc",   "/replica:a",
                       "/task:",       "/tpu:0",         "/foo:bar",        "/device:G-P:0", "/gpu:0/cpu:0",
                       "/job:a/job:b", "/gpu:1234567890", "cpu:0:1",        "/device:"};
  for (const char* s : bad) {
    StatusOr<DeviceSpec> spec = DeviceSpec::Parse(s);
    ASSERT_FALSE(spec.ok()) << s << " parsed as " << spec->ToString();
    EXPECT_EQ(spec.status().code(), Code::kInvalidArgument) << s;
    EXPECT_NE(spec.status().message().find(std::string("Malformed device specification '") + s + "'"),
              std::string::npos)
        << spec.status().message();
  }
}

TEST(DeviceSpecTest, MatchesLikeTfIsSpecification) {
  const DeviceSpec cpu0 = DeviceSpec::Local("CPU", 0);
  const DeviceSpec gpu1 = DeviceSpec::Local("GPU", 1);
  EXPECT_TRUE(P("").Matches(gpu1));
  EXPECT_TRUE(P("/gpu:1").Matches(gpu1));
  EXPECT_TRUE(P("/device:GPU:*").Matches(gpu1));
  EXPECT_TRUE(P("/job:localhost").Matches(gpu1));
  EXPECT_FALSE(P("/gpu:0").Matches(gpu1));
  EXPECT_FALSE(P("/job:ps").Matches(gpu1));
  EXPECT_FALSE(P("/device:cpu:0").Matches(cpu0));  // "cpu" is not "CPU"
  EXPECT_TRUE(P("/cpu:0").Matches(cpu0));
  EXPECT_FALSE(P("/gpu:1").Matches(P("/device:GPU:*")));  // a partial device has no id to match
}

TEST(DeviceSpecTest, MergeFromFillsAndRejectsConflicts) {
  DeviceSpec a = P("/job:localhost");
  ASSERT_TRUE(a.MergeFrom(P("/gpu:1")).ok());
  EXPECT_EQ(a.ToString(), "/job:localhost/device:GPU:1");

  DeviceSpec b = P("/device:GPU:0");
  Status s = b.MergeFrom(P("/device:CPU:0"));
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "Cannot merge devices with incompatible types: '/device:GPU:0' and '/device:CPU:0'");
  EXPECT_EQ(b.ToString(), "/device:GPU:0") << "a failed merge must leave the spec unchanged";

  DeviceSpec c = P("/gpu:0");
  s = c.MergeFrom(P("/gpu:1"));
  EXPECT_EQ(s.message(), "Cannot merge devices with incompatible ids: '/device:GPU:0' and '/device:GPU:1'");
  DeviceSpec j = P("/job:a");
  EXPECT_NE(j.MergeFrom(P("/job:b")).message().find("incompatible jobs"), std::string::npos);
}

TEST(DeviceSpecTest, SoftMergeClearsConflictingTypeAndId) {
  DeviceSpec a = P("/job:localhost/device:GPU:0");
  ASSERT_TRUE(a.MergeFrom(P("/device:CPU:0"), /*allow_soft_placement=*/true).ok());
  EXPECT_EQ(a.ToString(), "/job:localhost");
  DeviceSpec b = P("/gpu:0");
  ASSERT_TRUE(b.MergeFrom(P("/gpu:1"), true).ok());
  EXPECT_EQ(b.ToString(), "/device:GPU:*");
  DeviceSpec j = P("/job:a");
  EXPECT_FALSE(j.MergeFrom(P("/job:b"), true).ok()) << "soft placement resolves types and ids only";
}

TEST(DeviceSpecTest, OverrideWithIsNestedScopeMerging) {
  struct Case {
    const char* outer;
    const char* inner;
    const char* merged;
  };
  const Case cases[] = {
      {"/job:ps", "/gpu:1", "/job:ps/device:GPU:1"},
      {"/gpu:0", "/gpu:1", "/device:GPU:1"},
      {"/gpu:0", "/cpu:0", "/device:CPU:0"},
      {"/job:ps/task:1/device:GPU:0", "/task:2", "/job:ps/task:2/device:GPU:0"},
      {"/device:GPU:1", "/device:CPU:*", "/device:CPU:1"},
      {"/gpu:1", "/job:localhost/replica:0/task:0/device:CPU:0", "/job:localhost/replica:0/task:0/device:CPU:0"},
  };
  for (const Case& c : cases) {
    DeviceSpec spec = P(c.outer);
    spec.OverrideWith(P(c.inner));
    EXPECT_EQ(spec.ToString(), c.merged) << c.outer << " + " << c.inner;
  }
}

}  // namespace
}  // namespace tw
