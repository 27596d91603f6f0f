"""A replica's life beside the rounds: leadership (`leader`), `/metrics` `/healthz` `/readyz`
(`health`), the readiness counts and the reset probe (`probes`), the periodic summary line
(`summary`) and the garbage collector during listings (`heap`)."""
