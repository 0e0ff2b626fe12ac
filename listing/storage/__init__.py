"""All storage access, behind one :class:`~listing.storage.store.Store` protocol.

Filesystems are rebuilt from ``(protocol, options)`` wherever they are needed, driver
or executor, and never pickled live (DataFusion's object-store registry). Every failure
leaves this package as a :class:`~listing.errors.ListingError` naming the URL or file,
the operation and the cause. The s3fs and botocore details all this needs live here and
nowhere else.

Retries: a few storage options are ours (:class:`StorageSettings`); on S3 they become
botocore's retry configuration, s3fs's own retry loop is switched off so that it cannot
multiply botocore's attempts, and response bodies cut short are re-requested within the
same budget. Requests and retries are counted in a :class:`~listing.metrics.Counters`
(listing: the :class:`Lister`'s; reads: the one of the enclosing
:func:`~listing.storage.reading.counting` block, an opener's; writes: the store's
``metrics``).

Modules, bottom to top:

- ``settings``: :class:`StorageSettings`, the storage options we interpret ourselves;
- ``errors``: classification of storage failures, :func:`~listing.storage.errors.raise_as`;
- ``s3_pages``: LIST response bodies parsed in one pass;
- ``local_pages``: a local tree listed with ``os.scandir``;
- ``client``: building (and caching) filesystems; the S3 client's adjustments, applied
  once per client; one S3 request;
- ``spec``: :class:`StorageSpec`, how to build a filesystem, as picklable metadata;
- ``lister``: the counting :class:`Lister`, its :class:`Page` of :class:`ObjectMeta`;
- ``reading``: :func:`open_input` (reads pinned to the listed version), change checks;
- ``multipart``: S3 multipart uploads (zero-copy commits);
- ``store``: the :class:`Store` protocol and its S3, local and fsspec implementations;
- ``prefetch``: listings sent ahead of need from a few threads (the planner's
  :class:`~listing.storage.prefetch.Fetcher`).
"""

from listing.storage.lister import PAGE_SIZE, Lister, ObjectMeta, Page
from listing.storage.reading import open_input
from listing.storage.settings import StorageSettings
from listing.storage.spec import StorageSpec
from listing.storage.store import Store, open_store

__all__ = ["PAGE_SIZE", "Lister", "ObjectMeta", "Page", "StorageSettings", "StorageSpec",
           "Store", "open_input", "open_store"]
