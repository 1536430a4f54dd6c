// Query decoding and the request/response helpers: every malformed input is a Status, never a throw.
#include "acmetrace/http/http_message.h"

namespace acmetrace::http {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string_view HttpRequest::Header(std::string_view lower_name) const {
  for (const auto& [name, value] : headers) {
    if (name == lower_name) return value;
  }
  return {};
}

HttpResponse HttpResponse::Text(int status, std::string body, std::string content_type) {
  HttpResponse r;
  r.status = status;
  r.content_type = std::move(content_type);
  r.body = std::make_shared<const std::string>(std::move(body));
  return r;
}

std::string QuoteForMessage(std::string_view text) {
  constexpr size_t kMaxBytes = 64;
  std::string out = "'";
  for (size_t i = 0; i < text.size() && i < kMaxBytes; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    out += c < 0x20 || c == 0x7f ? '?' : text[i];
  }
  if (text.size() > kMaxBytes) out += "...";
  out += "'";
  return out;
}

core::Result<std::string> PercentDecode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%') {
      const int hi = i + 1 < text.size() ? HexValue(text[i + 1]) : -1;
      const int lo = i + 2 < text.size() ? HexValue(text[i + 2]) : -1;
      if (hi < 0 || lo < 0) {
        return core::Status::Error("bad percent-encoding " + QuoteForMessage(text.substr(i, 3)) +
                                   " (expected % and two hex digits)");
      }
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else {
      out.push_back(text[i] == '+' ? ' ' : text[i]);
    }
  }
  return out;
}

core::Result<std::vector<std::pair<std::string, std::string>>> ParseQuery(std::string_view query) {
  std::vector<std::pair<std::string, std::string>> pairs;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (pair.empty()) continue;  // "a=1&&b=2"
    const size_t eq = pair.find('=');
    core::Result<std::string> name = PercentDecode(pair.substr(0, eq));
    if (!name.ok()) return name.status();
    core::Result<std::string> value = PercentDecode(eq == std::string_view::npos ? "" : pair.substr(eq + 1));
    if (!value.ok()) return core::Status::Error(name.value() + ": " + value.status().message());
    pairs.emplace_back(std::move(name).value(), std::move(value).value());
  }
  return pairs;
}

core::Result<std::optional<std::string>> QueryValue(const HttpRequest& request, std::string_view name) {
  std::optional<std::string> found;
  for (const auto& [key, value] : request.query) {
    if (key != name) continue;
    if (found) return core::Status::Error(std::string(name) + ": given more than once");
    found = value;
  }
  return found;
}

const std::string* UnknownParameter(const HttpRequest& request, const std::vector<std::string_view>& allowed) {
  for (const auto& [key, value] : request.query) {
    bool known = false;
    for (std::string_view a : allowed) known = known || key == a;
    if (!known) return &key;
  }
  return nullptr;
}

}  // namespace acmetrace::http
