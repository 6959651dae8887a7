"""Run kernels/*.cu on the CPU: g++ compiles the same source with a small CUDA emulation header."""
