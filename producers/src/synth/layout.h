// The hardware of a synthetic cluster: server names (IPs, or pod names on Kalos), the order of their
// columns in the utilization files, IPMI server models, and hashed user names. Depends on the cluster
// and its size only, not on the seed: like a real cluster, the machines stay while the workload varies.
#pragma once

#include <string>
#include <vector>

#include "synth/model.h"

namespace acmetrace::producers::synth {

/// One 8-GPU server. Value type.
struct NodeInfo {
  std::string name;      // "10.140.1.10" or "lingjun-pod9-0016"
  char ipmi_model = 'A'; // Seren server model: A and B in GPU_AB_Power.csv (B without MEM_Power), C
};

/// A cluster's servers and naming. Value type.
struct ClusterLayout {
  std::vector<NodeInfo> nodes;    // indexed like the scheduler's nodes
  std::vector<int> column_order;  // node indices in the order the utilization files list them
  int cpu_servers = 0;            // CPU-only servers reported in CPU_D_Power.csv (Seren)
  std::vector<std::string> users; // hashed user names, "u5907"
};

ClusterLayout MakeLayout(const ClusterModel& model, int nodes);

}  // namespace acmetrace::producers::synth
