// Status and Result: a Result holds a value or the error saying why not, never neither.
#include "acmetrace/core/status.h"

#include <gtest/gtest.h>

#include <string>

namespace acmetrace::core {
namespace {

Result<std::string> Named(const std::string& name) {
  if (name.empty()) return Status::Error("no name");
  return name;
}

TEST(ResultTest, HoldsItsValue) {
  const Result<std::string> r = Named("seren");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value(), "seren");
  EXPECT_TRUE(r.status().ok());
}

TEST(ResultTest, HoldsItsError) {
  const Result<std::string> r = Status::Error("disk full");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "disk full");
}

// A Result from an Ok Status has neither value nor reason: it is refused, and the caller's error
// path gets a message naming the programming error instead of a value nobody set.
TEST(ResultTest, RefusesAnOkStatus) {
  const Result<std::string> r = Status::Ok();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), Result<std::string>::kOkStatusError);
}

}  // namespace
}  // namespace acmetrace::core
