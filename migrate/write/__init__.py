"""The one-shot writer: `migrate --execute` (a fresh plan, a reviewed `--plan`, `--resume`),
`rollback`, `verify --run` and `status`."""
