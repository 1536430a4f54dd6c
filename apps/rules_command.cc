// acmetrace rules: Prometheus rule files scaled for a replay at --speed N, and the intervals to use with them
// (docs/monitoring.md, "Rules at replay speed").
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <system_error>

#include "acmetrace/core/input_errors.h"
#include "acmetrace/core/log.h"
#include "acmetrace/producers/replay.h"
#include "acmetrace/rules/rule_scaler.h"
#include "acmetrace/scoring/rule_file.h"
#include "commands.h"

namespace acmetrace::apps {

namespace {

namespace fs = std::filesystem;

// Writes text to path through a temporary file in the same directory, renamed over it: a reader (a
// Prometheus reloading its rules) sees the old file or the new one, never half of one.
core::Status WriteWhole(const fs::path& path, const std::string& text) {
  const fs::path temporary = path.string() + ".tmp";
  std::FILE* out = std::fopen(temporary.c_str(), "wb");
  if (out == nullptr) return core::Status::Error(path.string() + ": cannot write: " + std::strerror(errno));
  int error = 0;
  if (std::fwrite(text.data(), 1, text.size(), out) != text.size() || std::fflush(out) != 0) error = errno;
  if (std::fclose(out) != 0 && error == 0) error = errno;
  if (error == 0 && std::rename(temporary.c_str(), path.c_str()) != 0) error = errno;
  if (error != 0) {
    std::remove(temporary.c_str());
    return core::Status::Error(path.string() + ": cannot write: " + std::strerror(error));
  }
  return core::Status::Ok();
}

}  // namespace

void RegisterRules(CLI::App& app, CommandRegistry& registry) {
  struct Flags {
    std::string speed, out;
    std::vector<std::string> files;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "rules", "write copies of Prometheus rule files scaled for a replay at --speed N (for, ranges, offsets, "
               "intervals divided by N) and print the prometheus.yml intervals to use with them");
  cmd->add_option("--speed", flags->speed,
                  "the replay speed the copies are for, trace seconds per wall second: a number in [" +
                      rules::FormatSpeed(producers::kMinSpeed) + ", " + rules::FormatSpeed(producers::kMaxSpeed) + "]")
      ->required();
  cmd->add_option("--out", flags->out, "directory to write the copies into (made if missing), one per rule file")
      ->required();
  cmd->add_option("files", flags->files, "Prometheus rule files, e.g. configs/prometheus/rules/*.yml")->required();
  cmd->callback([&registry, flags] {
    registry.OnRun([flags]() -> int {
      auto usage = [](const std::string& message) {
        core::LogError("rules", message);
        return 2;
      };
      const std::optional<double> speed = producers::ParseAcceptedSpeed(flags->speed);
      if (!speed) {
        return usage("--speed: not a number in [" + rules::FormatSpeed(producers::kMinSpeed) + ", " +
                     rules::FormatSpeed(producers::kMaxSpeed) + "] (replay's speeds but max): " +
                     core::QuotedValue(flags->speed));
      }
      if (*speed == 0) {
        return usage("--speed: max replays as fast as it can, at no fixed speed: there is no factor to scale the "
                     "rules by; give the number the replay runs at");
      }
      // Every file is read, checked and scaled before anything is written.
      const fs::path out_dir = flags->out;
      std::map<std::string, std::string> sources;  // file name in out_dir -> the rule file written there
      std::vector<std::pair<fs::path, std::string>> outputs;
      size_t warnings = 0;
      for (const std::string& file : flags->files) {
        const std::string name = fs::path(file).filename().string();
        if (auto [it, added] = sources.emplace(name, file); !added) {
          return usage(file + ": named as " + it->second + " is: both would be written to " +
                       (out_dir / name).string());
        }
        std::error_code ec;
        const fs::path target = out_dir / name;
        if (fs::exists(target, ec) && fs::equivalent(target, file, ec)) {
          return usage(file + ": --out " + flags->out + " is its own directory: the copy would overwrite it");
        }
        core::Result<scoring::RuleFileText> text = scoring::ReadRuleFile(file);
        if (!text.ok()) {
          core::LogError("rules", text.status().message());
          return 1;
        }
        core::Result<rules::ScaledRuleFile> scaled = rules::ScaleRuleFile(text.value(), *speed, file);
        if (!scaled.ok()) {
          core::LogError("rules", scaled.status().message());
          return 1;
        }
        for (const std::string& w : scaled.value().warnings) core::LogWarn("rules", w);
        warnings += scaled.value().warnings.size();
        outputs.emplace_back(target, std::move(scaled.value().text));
      }
      std::error_code ec;
      fs::create_directories(out_dir, ec);
      if (ec || !fs::is_directory(out_dir)) {
        core::LogError("rules", "--out " + flags->out + ": cannot make the directory: " +
                                    (ec ? ec.message() : std::string("not a directory")));
        return 1;
      }
      for (const auto& [path, text] : outputs) {
        if (core::Status s = WriteWhole(path, text); !s.ok()) {
          core::LogError("rules", s.message());
          return 1;
        }
      }
      const rules::ScaledDuration interval = rules::RecommendedIntervalMs(*speed);
      std::printf("rules: %zu rule file%s scaled for speed %s into %s (%zu warning%s above)\n", outputs.size(),
                  outputs.size() == 1 ? "" : "s", rules::FormatSpeed(*speed).c_str(), flags->out.c_str(), warnings,
                  warnings == 1 ? "" : "s");
      std::printf("rules: scrape and evaluate every %s: the trace's 15 s samples at speed %s%s\n",
                  scoring::FormatDuration(interval.ms).c_str(), rules::FormatSpeed(*speed).c_str(),
                  interval.rounding.empty() ? "" : (" (15s " + interval.rounding + ")").c_str());
      std::printf("rules: in prometheus.yml (rule_files are relative to its directory):\n%s",
                  rules::PrometheusSnippet(*speed, (out_dir / "*.yml").string()).c_str());
      return 0;
    });
  });
}

}  // namespace acmetrace::apps
