// HttpConnection: Boost.Beast's request parser fed incrementally; every outcome (a request, a limit,
// a malformed stream, a throwing handler) becomes one response.
#include "acmetrace/http/http_connection.h"

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/string_body.hpp>

#include <cctype>
#include <exception>

#include "acmetrace/core/record_json.h"

namespace acmetrace::http {

namespace beast_http = boost::beast::http;

struct HttpConnection::Parser {
  beast_http::request_parser<beast_http::string_body> parser;
};

namespace {

// A header value a handler set must not split the response.
std::string OneLine(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c == '\r' || c == '\n') c = ' ';
  }
  return out;
}

std::string Head(int status, const HttpResponse& response, size_t content_length, bool keep_alive, bool http10) {
  std::string head = "HTTP/1.1 " + std::to_string(status) + " ";
  const auto reason = beast_http::obsolete_reason(static_cast<beast_http::status>(status));
  head.append(reason.data(), reason.size());
  head += "\r\nContent-Type: " + OneLine(response.content_type) + "\r\n";
  for (const auto& [name, value] : response.headers) head += OneLine(name) + ": " + OneLine(value) + "\r\n";
  head += "Content-Length: " + std::to_string(content_length) + "\r\n";
  if (!keep_alive) {
    head += "Connection: close\r\n";
  } else if (http10) {
    head += "Connection: keep-alive\r\n";
  }
  head += "\r\n";
  return head;
}

}  // namespace

std::string HttpOutput::Bytes() const { return body ? head + *body : head; }

HttpResponse ErrorResponse(int status, std::string_view reason, bool json) {
  std::string text(reason);
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';  // one line, whatever the reason quotes
  }
  if (!json) return HttpResponse::Text(status, text + "\n");
  std::string body = "{\"error\":";
  core::AppendJsonString(body, text);
  body += "}\n";
  return HttpResponse::Text(status, std::move(body), "application/json");
}

HttpConnection::HttpConnection(const HttpHandler& handler, HttpLimits limits) : handler_(handler), limits_(limits) {}

HttpConnection::~HttpConnection() = default;

void HttpConnection::Receive(std::string_view bytes) {
  if (!closing_) buffer_.append(bytes);
}

bool HttpConnection::mid_request() const { return !buffer_.empty() || (parser_ && parser_->parser.got_some()); }

HttpOutput HttpConnection::Refuse(int status, std::string_view reason) {
  closing_ = true;
  buffer_.clear();
  parser_.reset();
  return ClosingOutput(ErrorResponse(status, reason, limits_.json_errors));
}

HttpOutput ClosingOutput(const HttpResponse& response) {
  return HttpOutput{Head(response.status, response, response.body ? response.body->size() : 0, false, false),
                    response.body};
}

HttpOutput HttpConnection::Answer(const HttpRequest& request, HttpResponse response, bool keep_alive) {
  if (!keep_alive) closing_ = true;
  const size_t length = response.body ? response.body->size() : 0;
  HttpOutput out;
  out.head = Head(response.status, response, length, keep_alive, request.version == 10);
  if (request.method != "HEAD") out.body = std::move(response.body);
  return out;
}

std::optional<HttpOutput> HttpConnection::Next() {
  if (closing_) return std::nullopt;
  if (!parser_) {
    parser_ = std::make_unique<Parser>();
    parser_->parser.header_limit(static_cast<std::uint32_t>(limits_.max_header_bytes));
    parser_->parser.body_limit(static_cast<std::uint64_t>(limits_.max_body_bytes));
    parser_->parser.eager(true);
  }
  beast_http::request_parser<beast_http::string_body>& parser = parser_->parser;
  boost::system::error_code ec;
  while (!parser.is_done()) {
    if (request_bytes_ == 0 && request_line_bytes_ == std::string::npos) request_line_bytes_ = buffer_.find('\n');
    const size_t used = parser.put(boost::asio::buffer(buffer_.data(), buffer_.size()), ec);
    buffer_.erase(0, used);
    request_bytes_ += used;
    if (ec == beast_http::error::need_more) return std::nullopt;
    if (ec) break;
    if (used == 0) return std::nullopt;
  }
  if (ec == beast_http::error::header_limit) {
    // The parser stops at the header limit without saying where: a request line that does not
    // end within the target limit is a long URL, anything else long header fields.
    const size_t line_end = request_line_bytes_;
    if (line_end == std::string::npos || line_end > limits_.max_target_bytes) {
      return Refuse(414, "request target longer than " + std::to_string(limits_.max_target_bytes) + " bytes");
    }
    return Refuse(431, "request header fields longer than " + std::to_string(limits_.max_header_bytes) + " bytes");
  }
  if (ec == beast_http::error::body_limit) {
    return Refuse(413, "request body longer than " + std::to_string(limits_.max_body_bytes) + " bytes");
  }
  if (ec) return Refuse(400, "malformed request: " + ec.message());

  const beast_http::request<beast_http::string_body> message = parser.release();
  parser_.reset();
  request_bytes_ = 0;
  request_line_bytes_ = std::string::npos;
  HttpRequest request;
  request.method = std::string(message.method_string());
  request.target = std::string(message.target());
  request.version = static_cast<int>(message.version());
  const bool keep_alive = message.keep_alive();
  if (request.target.size() > limits_.max_target_bytes) {
    return Refuse(414, "request target longer than " + std::to_string(limits_.max_target_bytes) + " bytes");
  }
  if (request.target.empty() || request.target.front() != '/') {
    return Refuse(400, "request target must be a path starting with '/', got " + QuoteForMessage(request.target));
  }
  const size_t question = request.target.find('?');
  request.path = request.target.substr(0, question);
  if (question != std::string::npos) {
    core::Result<std::vector<std::pair<std::string, std::string>>> query =
        ParseQuery(std::string_view(request.target).substr(question + 1));
    if (!query.ok()) {
      // The request itself was read whole: the connection stays usable.
      return Answer(request, ErrorResponse(400, "query: " + query.status().message(), limits_.json_errors),
                    keep_alive);
    }
    request.query = std::move(query).value();
  }
  for (const auto& field : message) {
    std::string name(field.name_string());
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    request.headers.emplace_back(std::move(name), std::string(field.value()));
  }
  request.body = message.body();

  HttpResponse response;
  try {
    response = handler_(request);
  } catch (const std::exception& e) {
    response = ErrorResponse(500, std::string("internal error: ") + e.what(), limits_.json_errors);
  } catch (...) {
    response = ErrorResponse(500, "internal error", limits_.json_errors);
  }
  return Answer(request, std::move(response), keep_alive);
}

std::string ServeHttpBytes(std::string_view input, const HttpHandler& handler, const HttpLimits& limits) {
  HttpConnection connection(handler, limits);
  connection.Receive(input);
  std::string out;
  while (std::optional<HttpOutput> response = connection.Next()) out += response->Bytes();
  return out;
}

}  // namespace acmetrace::http
