// acmetrace: one binary, one subcommand per stage. Exit codes: 0 ok, 1 failure, 2 usage.
#include <dlfcn.h>
#include <malloc.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "acmetrace/core/log.h"
#include "acmetrace/exporters/process_metrics.h"
#include "acmetrace_revision.h"  // generated at every build: kAcmetraceRevision
#include "commands.h"

namespace {

// Every record sent to Kafka is copied into a buffer librdkafka allocates and frees once it is
// delivered (~1 KB each, 100k+ a second), and its batch buffers are up to kafka.batch_size_bytes.
// With glibc's defaults the freed top of each heap goes back to the kernel and large buffers are
// mmapped and unmapped, so the same pages are faulted in again and again: ~13% of a Kafka replay's
// wall time (bench/README.md). Keep freed memory for reuse instead: the peak is unchanged, memory
// just is not returned below it. For the builds on glibc's malloc (sanitizer builds, or
// ACMETRACE_MALLOC=glibc); tcmalloc, the default, keeps freed memory itself and ignores mallopt.
void TuneMalloc() {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's maximum; buffers below it come from the heaps
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  mallopt(M_TOP_PAD, 16 << 20);
}

// The allocator the process runs on, for --version: tcmalloc (linked, or preloaded) says its version.
std::string Allocator() {
  using TcVersion = const char* (*)(int*, int*, const char**);
  auto tc_version = reinterpret_cast<TcVersion>(dlsym(RTLD_DEFAULT, "tc_version"));
  if (tc_version == nullptr) return "glibc malloc";
  int major = 0, minor = 0;
  const char* patch = nullptr;
  const char* name = tc_version(&major, &minor, &patch);
  return "tcmalloc (" + std::string(name != nullptr ? name : "gperftools") + ")";
}

}  // namespace

int main(int argc, char** argv) {
  TuneMalloc();
  CLI::App app{"acmetrace: replay the AcmeTrace release (Seren and Kalos, NSDI '24) as a live feed"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "help for every subcommand");
  acmetrace::exporters::SetBuildRevision(kAcmetraceRevision);
  const acmetrace::exporters::BuildInfo& build = acmetrace::exporters::GetBuildInfo();
  app.set_version_flag("--version",
                       "acmetrace " + std::string(build.version) + " (revision " + std::string(build.revision) + ", " +
                           std::string(build.compiler) + ", " + Allocator() + ")",
                       "print the version, the git revision it was built from, the compiler and the allocator, then "
                       "exit");
  acmetrace::apps::CommandRegistry registry;
  // Global: every subcommand's lines share one format (core/log.h).
  std::string log_format = "text";
  std::string log_level = "info";
  app.add_option("--log-format", log_format, "format of every line on stderr: text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  app.add_option("--log-level", log_level, "lowest level logged: debug, info, warn or error")
      ->check(CLI::IsMember({"debug", "info", "warn", "error"}))
      ->capture_default_str();
  acmetrace::apps::RegisterCommands(app, registry);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // A usage error is a log line too, in --log-format if that much was parsed.
    acmetrace::core::ConfigureLogging(
        acmetrace::core::ParseLogFormat(log_format).value_or(acmetrace::core::LogFormat::kText),
        acmetrace::core::LogLevel::kInfo);
    acmetrace::core::LogError("acmetrace", std::string(e.what()) + " (run with --help for more information)");
    return 2;
  }
  acmetrace::core::ConfigureLogging(*acmetrace::core::ParseLogFormat(log_format),
                                    *acmetrace::core::ParseLogLevel(log_level));
  try {
    return registry.Run();
  } catch (const std::invalid_argument& e) {
    acmetrace::core::LogError("acmetrace", e.what());
    return 2;
  }
}
