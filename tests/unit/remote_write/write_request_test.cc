// The remote write body as a receiver reads it: snappy, then a protobuf WriteRequest.
#include "acmetrace/remote_write/write_request.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace acmetrace::remote_write {
namespace {

TEST(WriteRequestTest, RoundTripKeepsLabelsSamplesAndOrder) {
  std::vector<TimeSeries> in = {
      {{{"__name__", "DCGM_FI_DEV_GPU_UTIL"}, {"gpu", "3"}, {"instance", "node-7"}},
       {{1'688'169'600'000, 57.5}, {1'688'169'615'000, 0}, {1'688'169'630'250, 100}}},
      {{{"__name__", "up"}, {"job", "acmetrace"}}, {{-1'000, 1}}},
  };
  const std::string body = EncodeWriteRequest(in);
  core::Result<std::vector<TimeSeries>> out = DecodeWriteRequest(body);
  ASSERT_TRUE(out.ok()) << out.status().message();
  ASSERT_EQ(out.value().size(), 2u);
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(out.value()[i].labels, in[i].labels);
    ASSERT_EQ(out.value()[i].samples.size(), in[i].samples.size());
    for (size_t j = 0; j < in[i].samples.size(); ++j) {
      EXPECT_EQ(out.value()[i].samples[j].ts_ms, in[i].samples[j].ts_ms);
      EXPECT_EQ(out.value()[i].samples[j].value, in[i].samples[j].value);
    }
  }
}

TEST(WriteRequestTest, HostileLabelValuesAndSpecialValuesSurvive) {
  const std::string hostile = std::string("a\"b\\c\nd}{,=") + std::string(1, '\0') + "é 漢字 " + std::string(10'000, 'x');
  std::vector<TimeSeries> in = {{{{"__name__", "m"}, {"user", hostile}, {"empty", ""}},
                                 {{1, std::numeric_limits<double>::quiet_NaN()},
                                  {2, std::numeric_limits<double>::infinity()},
                                  {3, -std::numeric_limits<double>::infinity()},
                                  {4, -0.0},
                                  {5, 1e-310}}}};
  core::Result<std::vector<TimeSeries>> out = DecodeWriteRequest(EncodeWriteRequest(in));
  ASSERT_TRUE(out.ok()) << out.status().message();
  ASSERT_EQ(out.value().size(), 1u);
  EXPECT_EQ(out.value()[0].labels, in[0].labels);
  const std::vector<Sample>& s = out.value()[0].samples;
  ASSERT_EQ(s.size(), 5u);
  EXPECT_TRUE(std::isnan(s[0].value));
  EXPECT_EQ(s[1].value, std::numeric_limits<double>::infinity());
  EXPECT_EQ(s[2].value, -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::signbit(s[3].value));
  EXPECT_EQ(s[4].value, 1e-310);
}

TEST(WriteRequestTest, LabelsEncodedOnceAreTheLabelsARequestCarries) {
  const std::vector<Label> a = {{"__name__", "DCGM_FI_DEV_GPU_TEMP"}, {"gpu", "0"}, {"long", std::string(300, 'v')}};
  const std::vector<Label> b = {{"__name__", "up"}};
  const std::string a_encoded = EncodeLabels(a);
  const std::string b_encoded = EncodeLabels(b);
  // Zero time and +0.0 are protobuf defaults (left out of the wire), -0.0 is not.
  const std::vector<Sample> a_samples = {{0, 0.0}, {15'000, -0.0}, {-15'000, 2.5}};
  const Sample b_sample = {1'688'169'600'000, 1};
  std::vector<EncodedSeries> in = {{a_encoded, a_samples.data(), a_samples.size()}, {b_encoded, &b_sample, 1}};
  core::Result<std::vector<TimeSeries>> out = DecodeWriteRequest(EncodeWriteRequest(in));
  ASSERT_TRUE(out.ok()) << out.status().message();
  ASSERT_EQ(out.value().size(), 2u);
  EXPECT_EQ(out.value()[0].labels, a);
  EXPECT_EQ(out.value()[1].labels, b);
  ASSERT_EQ(out.value()[0].samples.size(), 3u);
  EXPECT_EQ(out.value()[0].samples[0].ts_ms, 0);
  EXPECT_EQ(out.value()[0].samples[0].value, 0.0);
  EXPECT_EQ(out.value()[0].samples[1].ts_ms, 15'000);
  EXPECT_TRUE(std::signbit(out.value()[0].samples[1].value));
  EXPECT_EQ(out.value()[0].samples[2].ts_ms, -15'000);
  EXPECT_EQ(out.value()[0].samples[2].value, 2.5);
  EXPECT_EQ(out.value()[1].samples[0].ts_ms, 1'688'169'600'000);
}

TEST(WriteRequestTest, BodyIsSnappyNotRawProtobuf) {
  std::vector<TimeSeries> in = {{{{"__name__", "m"}}, {{1, 1}}}};
  const std::string body = EncodeWriteRequest(in);
  // A receiver that skipped snappy would read garbage: the raw protobuf is not a valid body.
  EXPECT_FALSE(DecodeWriteRequest("\x0a\x03" "abc").ok());
  EXPECT_TRUE(DecodeWriteRequest(body).ok());
}

TEST(WriteRequestTest, GarbageIsAnErrorNotACrash) {
  for (const std::string& bad : {std::string(), std::string("\xff\xff\xff\xff\x0f", 5), std::string(100, '\x80')}) {
    EXPECT_FALSE(DecodeWriteRequest(bad).ok());
  }
}

TEST(WriteRequestTest, EmptyRequestEncodes) {
  core::Result<std::vector<TimeSeries>> out = DecodeWriteRequest(EncodeWriteRequest(std::vector<TimeSeries>{}));
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out.value().empty());
}

}  // namespace
}  // namespace acmetrace::remote_write
