// acmetrace synth: AcmeTrace-format files with the release's statistics (see docs/synth.md).
#include <cstdio>

#include "commands.h"

namespace acmetrace::apps {
void RegisterSynth(CLI::App&, CommandRegistry&) {}
}  // namespace acmetrace::apps
