"""Inference backends behind one interface, the model artifact, and the compile CLI."""
