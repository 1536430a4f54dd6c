// Query decoding, parameter lookup and listen addresses: every bad input is a Status naming it.
#include "acmetrace/http/http_message.h"

#include <gtest/gtest.h>

#include "acmetrace/http/http_server.h"

namespace acmetrace::http {
namespace {

TEST(HttpMessageTest, PercentDecodeAcceptsEscapesAndPlus) {
  EXPECT_EQ(PercentDecode("a%20b+c%2B%2f").value(), "a b c+/");
  EXPECT_EQ(PercentDecode("%00").value(), std::string(1, '\0'));
  EXPECT_EQ(PercentDecode("").value(), "");
}

TEST(HttpMessageTest, PercentDecodeRejectsBadEscapes) {
  for (const char* bad : {"%", "%z", "%zz", "a%4", "%4g", "%%41"}) {
    const core::Result<std::string> r = PercentDecode(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("bad percent-encoding"), std::string::npos) << r.status().message();
  }
}

TEST(HttpMessageTest, ParseQueryKeepsOrderAndEmptyValues) {
  const auto q = ParseQuery("a=1&&b&c=%41=x").value();
  ASSERT_EQ(q.size(), 3u);
  EXPECT_EQ(q[0], (std::pair<std::string, std::string>{"a", "1"}));
  EXPECT_EQ(q[1], (std::pair<std::string, std::string>{"b", ""}));
  EXPECT_EQ(q[2], (std::pair<std::string, std::string>{"c", "A=x"}));
}

TEST(HttpMessageTest, QueryValueSaysMissingOrRepeated) {
  HttpRequest r;
  r.query = {{"t", "1"}, {"value", "2"}, {"t", "3"}};
  EXPECT_FALSE(QueryValue(r, "x").value().has_value());
  EXPECT_EQ(*QueryValue(r, "value").value(), "2");
  const auto repeated = QueryValue(r, "t");
  ASSERT_FALSE(repeated.ok());
  EXPECT_EQ(repeated.status().message(), "t: given more than once");
  EXPECT_EQ(*UnknownParameter(r, {"t"}), "value");
  EXPECT_EQ(UnknownParameter(r, {"t", "value"}), nullptr);
}

TEST(HttpMessageTest, QuoteForMessageIsOneShortLine) {
  EXPECT_EQ(QuoteForMessage("a\nb"), "'a?b'");
  EXPECT_EQ(QuoteForMessage(std::string(100, 'x')), "'" + std::string(64, 'x') + "...'");
}

TEST(ListenAddressTest, AcceptsHostPortAndPortAlone) {
  EXPECT_EQ(ParseListenAddress(":9400").value().host, "0.0.0.0");  // dcgm-exporter's form
  EXPECT_EQ(ParseListenAddress(":9400").value().port, 9400);
  EXPECT_EQ(ParseListenAddress("127.0.0.1:0").value().host, "127.0.0.1");
  EXPECT_EQ(ParseListenAddress("localhost:80").value().host, "127.0.0.1");
  EXPECT_EQ(ParseListenAddress("[::1]:9400").value().host, "::1");
  EXPECT_EQ(ParseListenAddress("0.0.0.0:65535").value().port, 65535);
}

TEST(ListenAddressTest, RejectsWhatIsNotAnAddress) {
  EXPECT_EQ(ParseListenAddress("9400").status().message(), "expected HOST:PORT or :PORT, got '9400'");
  EXPECT_EQ(ParseListenAddress(":65536").status().message(), "bad port '65536' (expected 0..65535)");
  EXPECT_EQ(ParseListenAddress("1.2.3.4:").status().message(), "bad port '' (expected 0..65535)");
  EXPECT_EQ(ParseListenAddress(":94x0").status().message(), "bad port '94x0' (expected 0..65535)");
  EXPECT_NE(ParseListenAddress("example.org:80").status().message().find("not an IP address: 'example.org'"),
            std::string::npos);
}

}  // namespace
}  // namespace acmetrace::http
