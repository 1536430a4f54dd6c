// librdkafka client creation, its callbacks, and the bounded wait for a broker at start.
#include "rdkafka_handles.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "acmetrace/core/log.h"
#include "acmetrace/core/time.h"

namespace acmetrace::kafka::internal {
namespace {

constexpr int64_t kRepeatQuietMs = 10'000;

ClientState& StateOf(const rd_kafka_t* rk) { return *static_cast<ClientState*>(rd_kafka_opaque(rk)); }

void ErrorCallback(rd_kafka_t* rk, int err, const char* reason, void* opaque) {
  static_cast<ClientState*>(opaque)->OnError(rk, err, reason);
}

void LogCallback(const rd_kafka_t* rk, int level, const char* facility, const char* message) {
  StateOf(rk).OnLog(level, facility, message);
}

void DeliveryCallback(rd_kafka_t*, const rd_kafka_message_t* message, void* opaque) {
  static_cast<ClientState*>(opaque)->OnDelivery(message);
}

}  // namespace

void ClientState::OnError(rd_kafka_t* rk, int err, const char* reason) {
  std::string text = reason != nullptr ? reason : rd_kafka_err2str(static_cast<rd_kafka_resp_err_t>(err));
  if (err == RD_KAFKA_RESP_ERR__FATAL) {
    char buf[512];
    const rd_kafka_resp_err_t cause = rd_kafka_fatal_error(rk, buf, sizeof(buf));
    text = std::string(rd_kafka_err2name(cause)) + ": " + buf;
    std::lock_guard<std::mutex> lock(mutex_);
    if (!fatal_.load()) fatal_message_ = text;
    fatal_.store(true);
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    last_error_ = text;
  }
  if (!quiet_.load()) Print(std::string(err == RD_KAFKA_RESP_ERR__FATAL ? "fatal error: " : "") + text);
}

void ClientState::OnLog(int level, const char* facility, const char* message) {
  if (verbose_.load()) {
    std::lock_guard<std::mutex> lock(mutex_);
    core::LogTo(log_, core::LogLevel::kInfo, "kafka", std::to_string(level) + "|" + facility + "| " + message);
    return;
  }
  // Connection failures also arrive as errors (OnError); errors and warnings only, once.
  if (level > 4 || quiet_.load() || std::string_view(facility) == "FAIL") return;
  Print(message);
}

void ClientState::OnDelivery(const rd_kafka_message_t* message) {
  if (message->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
    delivered.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  failed.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mutex_);
  if (first_delivery_error_.empty()) {
    first_delivery_error_ = std::string(rd_kafka_topic_name(message->rkt)) + " key '" +
                            std::string(static_cast<const char*>(message->key), message->key_len) +
                            "': " + rd_kafka_err2str(message->err);
  }
}

std::string ClientState::fatal_message() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return fatal_message_;
}

std::string ClientState::last_error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_error_;
}

std::string ClientState::first_delivery_error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return first_delivery_error_;
}

void ClientState::Print(const std::string& line) {
  std::lock_guard<std::mutex> lock(mutex_);
  const int64_t now = SteadyNowMs();
  if (line == last_printed_ && now - last_printed_ms_ < kRepeatQuietMs) {
    ++suppressed_;
    return;
  }
  if (suppressed_ > 0) {
    core::LogTo(log_, core::LogLevel::kWarn, "kafka",
                "(last message repeated " + std::to_string(suppressed_) + " times)");
  }
  suppressed_ = 0;
  last_printed_ = line;
  last_printed_ms_ = now;
  core::LogTo(log_, core::LogLevel::kWarn, "kafka", line);
}

core::Result<KafkaHandle> CreateClient(const Properties& properties, ClientRole role, ClientState& state) {
  ConfHandle conf(rd_kafka_conf_new());
  char errstr[512];
  for (const auto& [name, value] : properties) {
    if (rd_kafka_conf_set(conf.get(), name.c_str(), value.c_str(), errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK) {
      const std::string shown = IsSecretProperty(name) ? "[redacted]" : "'" + value + "'";
      return core::Status::Error("kafka property " + name + "=" + shown + ": " + RedactSecrets(errstr, properties));
    }
  }
  for (const auto& [name, value] : properties) {
    if (name == "debug") state.set_verbose(!value.empty());
  }
  rd_kafka_conf_set_opaque(conf.get(), &state);
  rd_kafka_conf_set_error_cb(conf.get(), ErrorCallback);
  rd_kafka_conf_set_log_cb(conf.get(), LogCallback);
  if (role == ClientRole::kProducer) rd_kafka_conf_set_dr_msg_cb(conf.get(), DeliveryCallback);
  const rd_kafka_type_t type = role == ClientRole::kConsumer ? RD_KAFKA_CONSUMER : RD_KAFKA_PRODUCER;
  // On success rd_kafka_new takes the conf; on failure it is still ours.
  rd_kafka_t* rk = rd_kafka_new(type, conf.get(), errstr, sizeof(errstr));
  if (rk == nullptr) return core::Status::Error("kafka client: " + RedactSecrets(errstr, properties));
  (void)conf.release();
  return KafkaHandle(rk);
}

core::Status WaitForBroker(rd_kafka_t* rk, ClientState& state, const std::string& brokers, int64_t timeout_ms) {
  state.set_quiet(true);
  const int64_t deadline = SteadyNowMs() + timeout_ms;
  rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR__TIMED_OUT;
  for (;;) {
    const int64_t left = deadline - SteadyNowMs();
    if (left <= 0) break;
    const rd_kafka_metadata_t* md = nullptr;
    err = rd_kafka_metadata(rk, 0, nullptr, &md, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (md != nullptr) rd_kafka_metadata_destroy(md);
    rd_kafka_poll(rk, 0);  // serves error_cb: remembers why a connection failed
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR) break;
    if (state.fatal()) break;
    if (err != RD_KAFKA_RESP_ERR__TIMED_OUT && err != RD_KAFKA_RESP_ERR__TRANSPORT) {
      // Fails fast without waiting for the timeout (e.g. all brokers down): wait a little and ask again.
      rd_kafka_poll(rk, static_cast<int>(std::min<int64_t>(std::max<int64_t>(deadline - SteadyNowMs(), 0), 200)));
    }
  }
  state.set_quiet(false);
  if (err == RD_KAFKA_RESP_ERR_NO_ERROR) return core::Status::Ok();
  std::string why = state.fatal() ? state.fatal_message() : state.last_error();
  if (why.empty()) why = rd_kafka_err2str(err);
  return core::Status::Error("cannot reach Kafka at " + brokers + " within " + std::to_string(timeout_ms) +
                             " ms (kafka.connect_timeout_ms): " + why);
}

namespace {

std::string_view HeaderOf(rd_kafka_message_t* m, std::string_view name) {
  rd_kafka_headers_t* headers = nullptr;
  if (rd_kafka_message_headers(m, &headers) != RD_KAFKA_RESP_ERR_NO_ERROR) return {};
  const void* value = nullptr;
  size_t size = 0;
  if (rd_kafka_header_get_last(headers, name.data(), &value, &size) != RD_KAFKA_RESP_ERR_NO_ERROR || value == nullptr) {
    return {};
  }
  return std::string_view(static_cast<const char*>(value), size);
}

}  // namespace

int64_t TraceTsOf(rd_kafka_message_t* m) {
  const std::string_view text = HeaderOf(m, kTraceTsHeader);
  if (text.empty()) return kNoTraceTs;
  const std::optional<int64_t> ts = ParseTraceTs(text);
  return ts && core::IsTraceTimeMs(*ts) ? *ts : kInvalidTraceTs;
}

int64_t TraceTimeOfMessage(rd_kafka_message_t* m, std::string_view topic, core::RecordParser& parser) {
  const int64_t header = TraceTsOf(m);
  if (header != kNoTraceTs || m->payload == nullptr) return header;
  const int64_t value = parser.TraceTimeOf(topic, std::string_view(static_cast<const char*>(m->payload), m->len));
  if (value != kNoTraceTs) return value;
  // None: a record topic's value that cannot parse goes at once, to be reported; another topic's has no time.
  return core::RecordKindOfTopic(topic) == core::RecordKind::kUnknown ? kNoTraceTs : kInvalidTraceTs;
}

std::string_view TraceTsTextOf(rd_kafka_message_t* m) { return HeaderOf(m, kTraceTsHeader); }

std::string_view MarkerOf(rd_kafka_message_t* m) {
  if (m->payload != nullptr || m->key != nullptr) return {};  // a marker has neither
  return HeaderOf(m, kMarkerHeader);
}

int64_t SteadyNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace acmetrace::kafka::internal
