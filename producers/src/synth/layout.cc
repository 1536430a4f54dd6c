// Names and order of a synthetic cluster's servers, patterned on the release's (Seren IPs 10.140.0.131
// to 10.140.1.177 in shuffled column order; Kalos 10.150.x.y and lingjun pod names).
#include "synth/layout.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include "synth/random.h"

namespace acmetrace::producers::synth {
namespace {

std::string SerenIp(int i) {
  if (i < 125) return "10.140.0." + std::to_string(131 + i);
  const int k = i - 125;
  return "10.140." + std::to_string(1 + k / 254) + "." + std::to_string(1 + k % 254);
}

std::string KalosIp(int i) { return "10.150." + std::to_string(i / 200) + "." + std::to_string(20 + i % 200); }

std::string PodName(int k) {
  // Pods of 32 servers, numbered from 9 as in the release's example ("lingjun-pod9-0016").
  std::string number = std::to_string(1 + k % 32);
  number.insert(0, 4 - number.size(), '0');
  return "lingjun-pod" + std::to_string(9 + k / 32) + "-" + number;
}

}  // namespace

ClusterLayout MakeLayout(const ClusterModel& model, int nodes) {
  ClusterLayout layout;
  const uint64_t key = HashName(model.name);
  Rng rng(MixKey(key, 0x1A70));
  layout.nodes.resize(nodes);
  int pods = 0;
  for (int i = 0; i < nodes; ++i) {
    NodeInfo& node = layout.nodes[i];
    if (model.name == "kalos") {
      node.name = rng.Uniform() < model.pod_named_share ? PodName(pods++) : KalosIp(i);
    } else {
      node.name = SerenIp(i);
    }
    const double u = rng.Uniform();
    node.ipmi_model = u < 0.55 ? 'A' : u < 0.75 ? 'B' : 'C';
  }
  layout.column_order.resize(nodes);
  for (int i = 0; i < nodes; ++i) layout.column_order[i] = i;
  for (int i = nodes; i > 1; --i) std::swap(layout.column_order[i - 1], layout.column_order[rng.Below(i)]);
  layout.cpu_servers = std::max(1, static_cast<int>(std::lround(nodes * 0.1)));

  std::set<std::string> seen;
  Rng users(MixKey(key, 0x05E2));
  static constexpr char kHex[] = "0123456789abcdef";
  while (static_cast<int>(layout.users.size()) < model.users) {
    const uint64_t bits = users.Next();
    std::string name = "u";
    for (int d = 0; d < 4; ++d) name.push_back(kHex[(bits >> (4 * d)) & 0xF]);
    if (seen.insert(name).second) layout.users.push_back(std::move(name));
  }
  return layout;
}

}  // namespace acmetrace::producers::synth
