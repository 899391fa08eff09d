"""Inference backends behind one interface and the model artifact: what an executor imports to
load and run an artifact. The toolchain that writes artifacts is compiler/."""
