"""Talking to the API server: credentials (`cluster_config`), the client (`client`), its
requests on kept-alive connections (`direct_requests`, `keepalive`, `json_codec`), what a
failed call is (`errors`), every kind's writes (`writer`) and the write fence of a round
(`reset`: the resourceVersion watermark)."""
