// The synth.* configuration keys and how they map onto SynthOptions.
#pragma once

#include "acmetrace/core/config.h"
#include "acmetrace/producers/synth.h"

namespace acmetrace::producers {

/// Declares the synth.* keys (defaults and help) in config.
void DeclareSynthConfig(core::Config& config);

/// Builds SynthOptions from the synth.* keys (out_dir is left to the caller). A malformed value
/// throws std::invalid_argument naming the key (a usage error at start-up).
SynthOptions SynthOptionsFromConfig(const core::Config& config);

}  // namespace acmetrace::producers
