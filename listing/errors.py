"""Errors users see. Each names the URL, path, column, option or value at fault."""

from __future__ import annotations


class ListingError(Exception):
    """Base class for every error this toolkit raises on bad input or a failing store."""


class TableNotFoundError(ListingError):
    """The bucket or prefix does not exist, or holds no files and no schema was given."""


class PartitionLayoutError(ListingError):
    """Directory levels disagree: mixed ``k=v`` and plain names, or different column names."""


class PartitionValueError(ListingError, ValueError):
    """A partition value does not parse as its declared or inferred type."""


class FilterError(ListingError, ValueError):
    """A ``where`` predicate is malformed, names an unknown column, or has a bad literal."""


class StorageError(ListingError):
    """The object store failed (throttled, unreachable, denied, connection reset or body cut
    short) while listing or reading, after the client's retries (``max_retries``). Names the
    URL or file, the operation and the cause; never skipped by an ``ignore_*`` option."""


class FileReadError(ListingError):
    """A data file is missing, truncated or corrupt; names the file (and offset if known)."""


class OptionError(ListingError, ValueError):
    """An option has an unknown name or a value that does not parse."""


class MissingFileError(FileReadError):
    """A listed file is gone when a task opens it."""


class CorruptFileError(FileReadError):
    """A file's content cannot be decoded by its format."""


class FileChangedError(FileReadError):
    """A listed file was rewritten between listing and reading; never skipped as missing
    or corrupt, since neither is true."""


class StorageConfigError(OptionError):
    """The storage cannot be used as configured: an unknown protocol, an unknown or malformed
    storage option, a request the client refuses to send (an invalid bucket name), missing
    credentials. Retrying does not help; fixing the URL or the options does."""


class TableExistsError(ListingError):
    """A write with ``mode="error"`` found visible files at the table's URL."""


class CommitError(ListingError):
    """A write job's commit failed. Says whether the job was rolled back (the table as it
    was) or is committed with old files left to remove (``listing recover`` finishes)."""


class ConcurrentWriteError(CommitError):
    """Another overwrite of the same table is committing: this job's commit did not start
    (nothing visible changed). Names the job holding the table's lock."""


class SparkSetupError(ListingError, RuntimeError):
    """Spark cannot be set up for this toolkit: a Spark outside the supported lines, the
    extension jar missing and not compilable, the S3A connector not fetchable. Names what is
    missing and how to provide it. Also a :class:`RuntimeError`, as these errors were before
    they joined this hierarchy (code catching that keeps working)."""
