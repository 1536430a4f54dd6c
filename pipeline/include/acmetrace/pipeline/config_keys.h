// Every stage's configuration keys in one visible list, and the check of a whole configuration that
// runs at load, before any file is opened or thread started.
#pragma once

#include <string>
#include <vector>

#include "acmetrace/core/config.h"

namespace acmetrace::pipeline {

/// Declares every stage's keys (replay, kafka, file, synth, process, detect, export, run, backfill,
/// remote_write), in the order `acmetrace config` prints them.
void DeclareAllConfig(core::Config& config);

/// Checks a loaded configuration completely: every value against its declared type and range
/// (Config::Validate), then what only a stage can judge across keys (process.windows_s multiples of
/// the base window, a detector's close threshold beyond its open one, basic auth set both or
/// neither) by building each stage's settings, the detectors' included. One line per error,
/// "WHERE: reason"; empty when the configuration is good. Opens no file.
std::vector<std::string> CheckAllConfig(const core::Config& config);

}  // namespace acmetrace::pipeline
