"""Benchmarks of endpointslice-operator: ``python -m benchmarks [--quick|--full] --json FILE``."""
