"""The Spark edge: the ``listing`` data sources, the session, the JVM extension's Python side.

Every Spark Python worker that runs our code imports this package first; in such a worker
:func:`listing.spark.daemon.install` makes a reused worker end quietly when Spark closes it.
"""

from listing.spark import daemon

daemon.install()
