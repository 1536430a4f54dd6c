// Joins the embedded chunks of the published CSVs (see embed_published_data.cmake).
#include "acmetrace/producers/published_data.h"

namespace acmetrace::producers {

extern const char* const kPublishedClusterSummaryChunks[];
extern const char* const kPublishedUtilizationCdfChunks[];

namespace {
std::string Join(const char* const* chunks) {
  std::string out;
  for (; *chunks != nullptr; ++chunks) out += *chunks;
  return out;
}
}  // namespace

std::string PublishedClusterSummaryCsv() { return Join(kPublishedClusterSummaryChunks); }
std::string PublishedUtilizationCdfCsv() { return Join(kPublishedUtilizationCdfChunks); }

}  // namespace acmetrace::producers
