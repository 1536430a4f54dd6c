// A minimal blocking HTTP/1.0 GET on 127.0.0.1 for tests: enough to see the status and body a server
// sends (the exporter's /metrics in the unit tests, acmetrace run and Prometheus in the integration
// tests). No timeout: the servers under test answer or close.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

namespace acmetrace::test {

struct HttpResponse {
  int status = 0;  // 0: no connection, or no HTTP answer
  std::string body;
};

/// method path on 127.0.0.1:port (no body); extra_headers are "Name: value\r\n" lines added to the request.
inline HttpResponse HttpRequest(int port, const std::string& method, const std::string& path,
                                const std::string& extra_headers = "") {
  HttpResponse r;
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return r;
  }
  const std::string request = method + " " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n" + extra_headers +
                              (method == "POST" ? "Content-Length: 0\r\n" : "") + "\r\n";
  (void)!::write(fd, request.data(), request.size());
  std::string raw;
  char buf[65536];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) raw.append(buf, static_cast<size_t>(n));
  ::close(fd);
  if (raw.size() > 12) r.status = std::atoi(raw.c_str() + 9);
  const size_t body = raw.find("\r\n\r\n");
  if (body != std::string::npos) r.body = raw.substr(body + 4);
  return r;
}

/// GET path from 127.0.0.1:port.
inline HttpResponse HttpGet(int port, const std::string& path, const std::string& extra_headers = "") {
  return HttpRequest(port, "GET", path, extra_headers);
}

}  // namespace acmetrace::test
