"""Events in: list-watches (`list_watch`), Kopf for Nodes and custom resources (`kopf_wiring`,
`kopf_serving`), objects deleted while nobody watched (`relist`), DRA claims on demand
(`claim_watch`), and the router that turns events into index updates and queue keys
(`router`)."""
