"""The Kubernetes side of EMR on EKS: pod templates (YAML), the Neuron image, executor sizing."""
