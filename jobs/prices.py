"""On-demand prices of the instance types people score on, so every run summary can say what it cost.

Source: AWS's Amazon EC2 On-Demand pricing page (https://aws.amazon.com/ec2/pricing/on-demand/)
and the AWS Price List API (AmazonEC2 offer), us-east-1, Linux, shared tenancy, USD per hour,
no Savings Plan, Reserved Instance or Spot discount. Recorded 2026-12-01 from published copies of
those figures, each size confirmed in at least two independent copies; p4d and p5 are at the
prices AWS cut in June 2025. A size whose figure could not be confirmed is left out (r7i.12xlarge,
r7i.24xlarge and r7i.48xlarge were found in one copy only): like any type not listed here it
warns and has no cost. --usd-per-hour prices anything, including other regions.
"""
from __future__ import annotations

RECORDED = "2026-12-01"
REGION = "us-east-1"

USD_PER_HOUR: dict[str, float] = {
    # CPU. Within these families every size costs the same per vCPU.
    "c7i.large": 0.08925, "c7i.xlarge": 0.1785, "c7i.2xlarge": 0.357, "c7i.4xlarge": 0.714,
    "c7i.8xlarge": 1.428, "c7i.12xlarge": 2.142, "c7i.16xlarge": 2.856, "c7i.24xlarge": 4.284,
    "c7i.48xlarge": 8.568,
    "m7i.large": 0.1008, "m7i.xlarge": 0.2016, "m7i.2xlarge": 0.4032, "m7i.4xlarge": 0.8064,
    "m7i.8xlarge": 1.6128, "m7i.12xlarge": 2.4192, "m7i.16xlarge": 3.2256, "m7i.24xlarge": 4.8384,
    "m7i.48xlarge": 9.6768,
    "r7i.large": 0.1323, "r7i.xlarge": 0.2646, "r7i.2xlarge": 0.5292, "r7i.4xlarge": 1.0584,
    "r7i.8xlarge": 2.1168, "r7i.16xlarge": 4.2336,
    # GPU (NVIDIA T4, A10G, L4, L40S, A100, H100).
    "g4dn.xlarge": 0.526, "g4dn.2xlarge": 0.752, "g4dn.4xlarge": 1.204, "g4dn.8xlarge": 2.176,
    "g4dn.12xlarge": 3.912, "g4dn.16xlarge": 4.352, "g4dn.metal": 7.824,
    "g5.xlarge": 1.006, "g5.2xlarge": 1.212, "g5.4xlarge": 1.624, "g5.8xlarge": 2.448,
    "g5.12xlarge": 5.672, "g5.16xlarge": 4.096, "g5.24xlarge": 8.144, "g5.48xlarge": 16.288,
    "g6.xlarge": 0.8048, "g6.2xlarge": 0.9776, "g6.4xlarge": 1.3232, "g6.8xlarge": 2.0144,
    "g6.12xlarge": 4.6016, "g6.16xlarge": 3.3968, "g6.24xlarge": 6.6752, "g6.48xlarge": 13.3504,
    "g6e.xlarge": 1.861, "g6e.2xlarge": 2.24208, "g6e.4xlarge": 3.00424, "g6e.8xlarge": 4.52856,
    "g6e.12xlarge": 10.49264, "g6e.16xlarge": 7.57719, "g6e.24xlarge": 15.06559, "g6e.48xlarge": 30.13118,
    "p4d.24xlarge": 21.957642,
    "p5.48xlarge": 55.04,
    # Inferentia.
    "inf1.xlarge": 0.228, "inf1.2xlarge": 0.362, "inf1.6xlarge": 1.18, "inf1.24xlarge": 4.721,
    "inf2.xlarge": 0.7582, "inf2.8xlarge": 1.96786, "inf2.24xlarge": 6.49063, "inf2.48xlarge": 12.98127,
}
