#!/bin/bash
# EMR bootstrap action for GPU clusters on EMR 7.x (Amazon Linux 2023 uses cgroup v2), and on
# EMR 8, which gets EMR 7's GPU configuration (emr/releases.py says why).
# YARN's GPU isolation (yarn-site: linux-container-executor.cgroups.mount-path) needs a
# cgroup v1 "devices" hierarchy at /spark-rapids-cgroup; this mounts it on every node before
# YARN starts. Source: the EMR release guide's page on GPU clusters with Spark.
set -euxo pipefail
sudo mkdir -p /spark-rapids-cgroup/devices
if ! mountpoint -q /spark-rapids-cgroup/devices; then
  sudo mount -t cgroup -o devices cgroupv1-devices /spark-rapids-cgroup/devices
fi
sudo chmod a+rwx -R /spark-rapids-cgroup
