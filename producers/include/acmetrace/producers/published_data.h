// The AcmeTrace release's published statistics (data/acmetrace, CC BY 4.0), embedded in the binary.
#pragma once

#include <string>

namespace acmetrace::producers {

/// The release's cluster_summary.csv, verbatim.
std::string PublishedClusterSummaryCsv();
/// The release's utilization CDFs: cluster,metric,unit,cdf_percent,value.
std::string PublishedUtilizationCdfCsv();

}  // namespace acmetrace::producers
