#!/bin/bash
# EMR bootstrap action: create the node-local artifact and TensorRT plan cache on the EBS data
# volume (/mnt), writable by whichever user YARN runs containers as. spark-defaults point
# ACCEL_SCORING_CACHE at it (emr/profiles.py); the default /tmp sits on the small root volume.
#
# Args: <cache folder>
set -euo pipefail
DIR="${1:?cache folder, e.g. /mnt/accel-scoring-cache}"
sudo mkdir -p "$DIR"
sudo chmod 1777 "$DIR"
