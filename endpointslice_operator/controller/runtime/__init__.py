"""A replica's life beside the rounds: leadership (`leader`), `/metrics` `/healthz` `/readyz`
(`health`), the periodic summary line (`summary`) and the garbage collector during listings
(`heap`)."""
