"""The EndpointSelector owner kind (docs/endpointselector.md): its index and sync (`sync`),
the counts written to its status (`status`), serving it through Kopf (`watch`) and the ones
deleted while the watch had expired (`relist`)."""
