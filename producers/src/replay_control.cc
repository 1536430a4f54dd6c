// ReplayControlServer: the routes of the control endpoint over the shared HTTP server; every bad
// request is a JSON 4xx, none reaches the replay.
#include "acmetrace/producers/replay_control.h"

#include "acmetrace/core/record_json.h"
#include "acmetrace/core/time.h"

namespace acmetrace::producers {

namespace {

http::HttpResponse Json(int status, std::string body) {
  body += "\n";
  return http::HttpResponse::Text(status, std::move(body), "application/json");
}

http::HttpResponse Error(int status, std::string_view reason) { return http::ErrorResponse(status, reason, true); }

http::HttpResponse WrongMethod(std::string_view use, std::string_view allow) {
  http::HttpResponse r = Error(405, use);
  r.headers.emplace_back("Allow", std::string(allow));
  return r;
}

// The one parameter a control takes, checked: absent, repeated or joined by an unknown one is an
// error naming it.
core::Result<std::string> TheParameter(const http::HttpRequest& request, std::string_view name,
                                       std::string_view usage) {
  if (const std::string* unknown = http::UnknownParameter(request, {name})) {
    return core::Status::Error("unknown parameter " + http::QuoteForMessage(*unknown) + "; use " + std::string(usage));
  }
  core::Result<std::optional<std::string>> value = http::QueryValue(request, name);
  if (!value.ok()) return value.status();
  if (!value.value()) return core::Status::Error(std::string(name) + ": missing; use " + std::string(usage));
  return *value.value();
}

}  // namespace

std::string ReplayStatusJson(const ReplayStatus& s) {
  std::string out = "{\"trace_ms\":" + std::to_string(s.trace_ms) + ",\"trace_time\":";
  core::AppendJsonString(out, s.records > 0 ? core::FormatIsoTime(s.trace_ms, 0) : "");
  out += ",\"clock_trace_ms\":" + std::to_string(s.clock_trace_ms);
  out += ",\"speed\":";
  if (s.speed > 0) {
    core::AppendJsonNumber(out, s.speed);
  } else {
    out += "\"max\"";
  }
  out += ",\"paused\":";
  out += s.paused ? "true" : "false";
  out += ",\"running\":";
  out += s.running ? "true" : "false";
  out += ",\"records_sent\":" + std::to_string(s.records);
  out += ",\"lag_ms\":" + std::to_string(s.lag_ms);
  out += ",\"max_lateness_ms\":" + std::to_string(s.max_lateness_ms);
  // Progress by trace time over the replayed window; null while unknown.
  out += ",\"window_end_ms\":" + (s.window_last_ms != 0 ? std::to_string(s.window_last_ms) : std::string("null"));
  out += ",\"percent\":";
  if (s.progress.percent) {
    core::AppendJsonNumber(out, std::round(*s.progress.percent * 10) / 10);
  } else {
    out += "null";
  }
  out += ",\"eta_s\":";
  if (s.progress.eta_ms) {
    out += std::to_string((*s.progress.eta_ms + 500) / 1000);
  } else {
    out += "null";
  }
  out += "}";
  return out;
}

http::HttpServerOptions ControlServerOptions(const std::string& address) {
  http::HttpServerOptions options;
  options.listen = address;
  options.threads = 1;  // the handlers only touch the replayer's mutex: one thread serves them all
  options.max_connections = 16;
  options.limits.json_errors = true;
  return options;
}

ReplayControlServer::ReplayControlServer(Replayer& replayer) : replayer_(replayer) {}

ReplayControlServer::~ReplayControlServer() { Stop(); }

http::HttpResponse ReplayControlServer::Handle(const http::HttpRequest& request) {
  const std::string& path = request.path;
  if (path == "/status") {
    if (!request.IsRead()) return WrongMethod("use GET", "GET, HEAD");
    if (const std::string* unknown = http::UnknownParameter(request, {})) {
      return Error(400, "unknown parameter " + http::QuoteForMessage(*unknown) + "; /status takes none");
    }
    return Json(200, ReplayStatusJson(replayer_.status()));
  }
  if (path != "/pause" && path != "/resume" && path != "/seek" && path != "/speed") {
    return Error(404, "unknown path; try GET /status, POST /pause, /resume, /seek?t=T, /speed?value=N");
  }
  if (request.method != "POST") return WrongMethod("use POST", "POST");
  if (path == "/pause" || path == "/resume") {
    if (const std::string* unknown = http::UnknownParameter(request, {})) {
      return Error(400, "unknown parameter " + http::QuoteForMessage(*unknown) + "; " + path + " takes none");
    }
    path == "/pause" ? replayer_.Pause() : replayer_.Resume();
  } else if (path == "/seek") {
    core::Result<std::string> t = TheParameter(request, "t", "POST /seek?t=T");
    if (!t.ok()) return Error(400, t.status().message());
    const std::optional<int64_t> ms = core::ParseTimeMs(t.value());
    if (!ms) {
      return Error(400, "t: not unix seconds or ISO 8601 with an offset (URL-encode '+' as %2B): " +
                            http::QuoteForMessage(t.value()));
    }
    if (core::Status s = replayer_.Seek(*ms); !s.ok()) return Error(409, s.message());
  } else {
    core::Result<std::string> value = TheParameter(request, "value", "POST /speed?value=N|max");
    if (!value.ok()) return Error(400, value.status().message());
    const std::optional<double> speed = ParseAcceptedSpeed(value.value());
    if (!speed) return Error(400, "value: not " + AcceptedSpeedRange() + ": " + http::QuoteForMessage(value.value()));
    replayer_.SetSpeed(*speed);
  }
  return Json(200, ReplayStatusJson(replayer_.status()));
}

core::Status ReplayControlServer::Start(const std::string& address) { return Start(ControlServerOptions(address)); }

core::Status ReplayControlServer::Start(http::HttpServerOptions options) {
  Stop();
  server_ = std::make_unique<http::HttpServer>([this](const http::HttpRequest& r) { return Handle(r); },
                                               std::move(options));
  core::Status s = server_->Start();
  if (!s.ok()) {
    server_.reset();
    return core::Status::Error("control endpoint: " + s.message());
  }
  return s;
}

uint16_t ReplayControlServer::port() const { return server_ ? server_->port() : 0; }

std::string ReplayControlServer::url() const { return server_ ? server_->base_url() + "/status" : ""; }

void ReplayControlServer::Stop() {
  if (server_) server_->Stop();
}

}  // namespace acmetrace::producers
