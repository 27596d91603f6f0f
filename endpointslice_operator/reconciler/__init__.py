"""The EndpointSlice reconciler: a pure library."""
