"""The sub-commands of `endpointslice-operator`, one module each with `main(argv)`
(dispatched by `cli.py`)."""
