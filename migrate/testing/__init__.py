"""Harnesses only the tests and benchmarks use, kept apart from what zk2kafka runs (as kazoo's
`testing/` is).

`containers`: the sandbox cluster on testcontainers, for the fixtures when a Docker engine answers.
`spark`: a real Spark standalone cluster (master + worker) for the distributed diff path.
The `zk2kafka sandbox` command needs neither: it runs on `migrate.sandbox`.
"""
