"""What the tests share: how to run zk2kafka, wait, seed the stores, run old consumers, inject faults.

On the import path through pytest's `pythonpath` setting (pyproject.toml): `from support.cli import
zk2kafka`. Nothing here is a test; a test module imports from here, never from another test module.
"""
