"""What NVIDIA's dcgm-exporter Grafana dashboard (ID 12239, github.com/NVIDIA/dcgm-exporter, grafana/
dcgm-exporter-dashboard.json; not vendored here) reads, so the deploy checks can prove it works on the persona.

Its panels query these series by the `Hostname` and `gpu` labels; its `Hostname` and `gpu` variables are
label_values of DCGM_FI_DEV_FB_FREE. The AcmeTrace release has no SM clock, so the "GPU SM Clocks" panel stays
empty on replayed data. Its "GPU Utilization" panel reads DCGM_FI_PROF_GR_ENGINE_ACTIVE, which the release does not
have either: the persona derives it from GPU_UTIL when export.gr_engine_active is true (off by default: it is not a
measured value; docs/metrics.md)."""

SERIES = ["DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
          "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE"]
NOT_IN_RELEASE = {"DCGM_FI_DEV_SM_CLOCK"}
# Served only when a config key says so: series -> the key.
OPT_IN = {"DCGM_FI_PROF_GR_ENGINE_ACTIVE": "export.gr_engine_active"}
VARIABLE_SERIES = "DCGM_FI_DEV_FB_FREE"
LABELS = ("Hostname", "gpu")
