"""The Spark edge: the ``listing`` data sources, the session, the JVM extension's Python side.

Importing it checks that pyspark is of a supported Spark line (:mod:`listing.spark.lines`):
any other pyspark gets one line naming the supported versions, not an import error from
deep inside. Every Spark Python worker that runs our code imports this package first; in
such a worker :func:`listing.spark.daemon.install` makes a reused worker end quietly when
Spark closes it.
"""

import pyspark as _pyspark

from listing.spark import daemon
from listing.spark.lines import line_of as _line_of

_line_of(_pyspark.__version__)
daemon.install()
