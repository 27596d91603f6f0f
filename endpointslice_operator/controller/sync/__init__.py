"""One key's sync: a Service (`service`), its Endpoints (`endpoints`), a mirrored Endpoints
object (`mirroring`), address sources (`networks`) and the Events posted (`events`)."""
