"""ZooKeeper: reading every offset (`scan`, `reader`, `walk`, `layouts`, `parse`), and the
conditional znode writer the dual commit uses (`writer`). `_compat`: kazoo's private names."""
