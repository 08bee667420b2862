"""Bulk evaluation of compiled grantlog programs on Apache Spark (``grantlog[spark]``).

PySpark is imported lazily by the modules of this package, never by ``import grantlog``.
The Spark backend itself is built in its own issue; this package reserves the import name.
"""
