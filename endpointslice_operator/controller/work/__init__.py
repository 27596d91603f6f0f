"""Work to do and the pace of it: the rate-limited, de-duplicating work queue and its workers
(`queue`), and the client-side write budget (`budget`)."""
