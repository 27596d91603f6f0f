"""endpointslice-operator: EndpointSlices for opted-in Services, and the reconciler as a library."""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
