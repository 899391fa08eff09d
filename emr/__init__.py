"""Running the jobs for real: EMR on EC2 (GPU), EMR on EKS (Inferentia), packaging, Airflow."""
