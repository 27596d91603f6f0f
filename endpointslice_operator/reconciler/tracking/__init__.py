"""What the controller remembers between syncs: the generations it wrote (`tracker`), the
last-change trigger time (`trigger_time`) and the slice gauges' arithmetic
(`metrics_cache`)."""
