// libFuzzer target for the config loader: any bytes as the --config file, then the whole check the
// binary runs at load. The loader may only answer with its documented errors: one line each, naming
// the file; nothing may crash or throw, and a configuration that passes builds its detectors.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "acmetrace/core/config.h"
#include "acmetrace/pipeline/config_keys.h"
#include "acmetrace/processors/detector.h"

namespace {

void Require(bool ok, const std::string& what) {
  if (ok) return;
  std::fprintf(stderr, "config_fuzz: %s\n", what.c_str());
  std::abort();
}

// Every error is one line beginning with the origin (for a file) or a key / variable name.
void CheckLines(const std::string& message, std::string_view origin) {
  size_t start = 0;
  while (start <= message.size()) {
    size_t end = message.find('\n', start);
    if (end == std::string::npos) end = message.size();
    const std::string_view line = std::string_view(message).substr(start, end - start);
    Require(!line.empty(), "an empty error line in: " + message);
    Require(origin.empty() || line.substr(0, origin.size()) == origin, "an error not naming the file: " + std::string(line));
    Require(line.size() < 1024, "an error line of " + std::to_string(line.size()) + " bytes");
    start = end + 1;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace acmetrace;
  static const core::Config* const kDeclared = [] {
    auto* config = new core::Config();
    pipeline::DeclareAllConfig(*config);
    return config;
  }();
  core::Config config = *kDeclared;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const core::Status loaded = config.LoadYamlText(text, "fuzz.yaml");
  if (!loaded.ok()) {
    CheckLines(loaded.message(), "fuzz.yaml");
    return 0;
  }
  const std::vector<std::string> errors = pipeline::CheckAllConfig(config);
  for (const std::string& e : errors) CheckLines(e, "");
  if (errors.empty()) {
    // What the processor thread does when a cluster first appears: must not throw.
    const auto detectors = processors::MakeDetectorFactory(config)();
    Require(!detectors.empty() || !config.GetBool("detect.gpu_overheat.enabled"), "no detectors built");
  }
  return 0;
}
