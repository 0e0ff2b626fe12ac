"""The Spark edge: the ``listing`` data source, the session helpers and the extension.

Importing it checks that pyspark is of a supported Spark line (:mod:`listing.spark.lines`):
any other pyspark gets one line naming the supported versions, not an import error from
deep inside.
"""

import pyspark as _pyspark

from listing.spark.lines import line_of as _line_of

_line_of(_pyspark.__version__)
