package io.github.listing;

import java.io.IOException;
import java.io.Serializable;
import java.lang.reflect.Constructor;
import java.net.URI;
import java.util.Collections;
import java.util.Locale;
import java.util.Map;
import java.util.WeakHashMap;
import java.util.concurrent.ExecutionException;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FilterFileSystem;
import org.apache.hadoop.fs.FutureDataInputStreamBuilder;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.execution.datasources.PartitionedFile;

import scala.Function1;
import scala.Option;
import scala.collection.Iterator;
import scala.runtime.AbstractFunction1;

/**
 * Opens a handed-off S3 file with the size and ETag our listing gave it, so that Spark's
 * readers send S3A no HEAD for it.
 *
 * <p>WHY here and not in Spark or S3A settings: Spark's Parquet reader (4.3 too) opens a file
 * with parquet-java's {@code HadoopInputFile.fromPath}, which asks {@code getFileStatus} (a
 * HEAD), and its CSV and JSON line readers call {@code openFile(path)} with the split's bounds
 * only, so S3A heads the object to learn its length; the per-job open options apply one value
 * to every file. The one place a scan's own reads can be told each file's status is the
 * filesystem its reader function resolves from the scan's Hadoop configuration. So the
 * hand-off's file formats ({@code ListedFormats}, one per Scala version) put
 * {@link ListedS3A} here as that scan's {@code fs.s3a.impl} ({@link #prepare}) and run each
 * file's reader with the file's listed status as this thread's hint ({@link #reader}).
 *
 * <p>Invariants: the filesystem is a thin wrapper of the bucket's own S3A filesystem, the one
 * the scan would use without it (resolved with the configuration's original settings, from
 * Hadoop's cache); it answers from the hint only for the one path the task is opening, only
 * when that filesystem is Hadoop's {@code S3AFileSystem} with ETag change detection that
 * fails a changed object (mode {@code server} or {@code client}), and only with the listed
 * ETag: every GET of the file is then conditional on the version our planner listed, so a
 * file rewritten since listing fails the read (S3A's {@code RemoteFileChangedException})
 * instead of being read with a stale length. A configured {@code fs.s3a.impl} of another
 * class is never wrapped; a file without a listed ETag, or opened outside its reader call
 * (another thread), is headed as before. Secrets: nothing here logs or names a setting's value.
 */
public final class ListedOpens {

  /** The metadata key a handed-off file's listed ETag travels under (ListingFileIndex). */
  public static final String ETAG = "io.github.listing.etag";

  static final String S3A_FS = "org.apache.hadoop.fs.s3a.S3AFileSystem";
  static final String IMPL = "fs.s3a.impl";
  static final String NO_CACHE = "fs.s3a.impl.disable.cache";
  /** Where {@link #prepare} keeps the scan's own values of {@link #IMPL} and
   * {@link #NO_CACHE} ("" when unset), for the wrapped filesystem. */
  static final String ORIGINAL = "io.github.listing.listed-opens.original.";

  private ListedOpens() {
  }

  /**
   * Whether S3A spells an ETag with its quotes, as S3 sends it: from Hadoop 3.4 (AWS SDK
   * v2); Hadoop 3.3's S3A (SDK v1, Spark 3.5) compares ETags without them. A status whose
   * ETag is spelled otherwise fails every read as changed.
   */
  private static final boolean QUOTED = quotedEtags(
      org.apache.hadoop.util.VersionInfo.getVersion());

  static boolean quotedEtags(String hadoopVersion) {
    String[] parts = String.valueOf(hadoopVersion).split("[.-]");
    try {
      int major = Integer.parseInt(parts[0]);
      int minor = parts.length > 1 ? Integer.parseInt(parts[1]) : 0;
      return major > 3 || (major == 3 && minor >= 4);
    } catch (NumberFormatException e) {
      return true;
    }
  }

  /** The listed status of the file this thread's reader call is opening, or null. */
  private static final ThreadLocal<Hint> HINT = new ThreadLocal<>();

  /** A file's listed path, size, modification time and ETag (as this S3A spells it). */
  record Hint(Path path, long size, long mtime, String etag) {
  }

  /**
   * {@code conf}, a scan's Hadoop configuration, with {@link ListedS3A} as its S3A
   * filesystem class (uncached, so the scan's reads get it), the original settings kept
   * aside; left as it is when it names another {@code fs.s3a.impl} than Hadoop's.
   */
  public static Configuration prepare(Configuration conf) {
    String impl = conf.getTrimmed(IMPL);
    if (ListedS3A.class.getName().equals(impl)) {
      return conf;
    }
    if (impl != null && !impl.isEmpty() && !impl.equals(S3A_FS)) {
      return conf;  // the user's own filesystem: never replaced
    }
    conf.set(ORIGINAL + IMPL, impl == null ? "" : impl);
    String noCache = conf.get(NO_CACHE);
    conf.set(ORIGINAL + NO_CACHE, noCache == null ? "" : noCache);
    conf.set(IMPL, ListedS3A.class.getName());
    conf.setBoolean(NO_CACHE, true);
    return conf;
  }

  /** Spark's reader function {@code inner}, run with each file's listed status as hint. */
  public static Function1<PartitionedFile, Iterator<InternalRow>> reader(
      Function1<PartitionedFile, Iterator<InternalRow>> inner) {
    return new Reader(inner);
  }

  private static final class Reader extends AbstractFunction1<PartitionedFile,
      Iterator<InternalRow>> implements Serializable {
    private static final long serialVersionUID = 1L;
    private final Function1<PartitionedFile, Iterator<InternalRow>> inner;

    Reader(Function1<PartitionedFile, Iterator<InternalRow>> inner) {
      this.inner = inner;
    }

    @Override
    public Iterator<InternalRow> apply(PartitionedFile file) {
      Option<Object> etag = file.otherConstantMetadataColumnValues().get(ETAG);
      if (etag.isEmpty() || file.fileSize() <= 0) {
        return inner.apply(file);
      }
      Hint before = HINT.get();
      HINT.set(new Hint(file.toPath(), file.fileSize(), file.modificationTime(),
          QUOTED ? "\"" + etag.get() + "\"" : String.valueOf(etag.get())));
      try {
        return inner.apply(file);
      } finally {
        if (before == null) {
          HINT.remove();
        } else {
          HINT.set(before);
        }
      }
    }
  }

  /**
   * The S3A filesystem of a handed-off scan: the bucket's own filesystem, answering
   * {@code getFileStatus} and opens of the file being read from its listed status.
   */
  public static final class ListedS3A extends FilterFileSystem {

    /** Configurations with the original S3A settings, by the scan's (one per broadcast). */
    private static final Map<Configuration, Configuration> ORIGINALS =
        Collections.synchronizedMap(new WeakHashMap<>());
    private static volatile Constructor<?> s3aStatus;

    private boolean answers;

    public ListedS3A() {
      super();
    }

    @Override
    public void initialize(URI name, Configuration conf) throws IOException {
      fs = org.apache.hadoop.fs.FileSystem.get(name, original(conf));
      super.initialize(name, conf);
      Configuration own = fs.getConf();  // S3A's, with the bucket's settings applied
      String source = own.getTrimmed("fs.s3a.change.detection.source", "etag")
          .toLowerCase(Locale.ROOT);
      String mode = own.getTrimmed("fs.s3a.change.detection.mode", "server")
          .toLowerCase(Locale.ROOT);
      answers = fs.getClass().getName().equals(S3A_FS) && source.equals("etag")
          && (mode.equals("server") || mode.equals("client"));
    }

    private static Configuration original(Configuration conf) {
      return ORIGINALS.computeIfAbsent(conf, c -> {
        Configuration out = new Configuration(c);
        restore(out, IMPL);
        restore(out, NO_CACHE);
        return out;
      });
    }

    private static void restore(Configuration conf, String key) {
      String value = conf.get(ORIGINAL + key);
      if (value == null || value.isEmpty()) {
        conf.unset(key);
      } else {
        conf.set(key, value);
      }
    }

    /** The listed status of {@code path} when this thread is opening it, else null. */
    private FileStatus listed(Path path) throws IOException {
      Hint hint = HINT.get();
      if (!answers || hint == null || !hint.path().equals(path)) {
        return null;
      }
      try {
        Constructor<?> make = s3aStatus;
        if (make == null) {
          make = fs.getClass().getClassLoader().loadClass("org.apache.hadoop.fs.s3a.S3AFileStatus")
              .getConstructor(long.class, long.class, Path.class, long.class, String.class,
                  String.class, String.class);
          s3aStatus = make;
        }
        return (FileStatus) make.newInstance(hint.size(), hint.mtime(), hint.path(),
            fs.getDefaultBlockSize(path), UserGroupInformation.getCurrentUser().getShortUserName(),
            hint.etag(), null);
      } catch (ReflectiveOperationException | LinkageError e) {
        return null;  // no S3A status to carry the ETag: S3A heads the file as before
      }
    }

    @Override
    public FileStatus getFileStatus(Path path) throws IOException {
      FileStatus status = listed(path);
      return status != null ? status : fs.getFileStatus(path);
    }

    @Override
    public FutureDataInputStreamBuilder openFile(Path path) throws IOException {
      FutureDataInputStreamBuilder builder = fs.openFile(path);
      FileStatus status = listed(path);
      if (status != null) {
        builder.withFileStatus(status);
      }
      return builder;
    }

    @Override
    public FSDataInputStream open(Path path, int bufferSize) throws IOException {
      FileStatus status = listed(path);
      if (status == null) {
        return fs.open(path, bufferSize);
      }
      try {
        return fs.openFile(path).withFileStatus(status).build().get();
      } catch (ExecutionException e) {
        Throwable cause = e.getCause();
        if (cause instanceof IOException io) {
          throw io;
        }
        if (cause instanceof RuntimeException runtime) {
          throw runtime;
        }
        throw new IOException(cause);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new java.io.InterruptedIOException("interrupted opening " + path);
      }
    }

    /** The bucket's filesystem is shared (Hadoop's cache): closing this wrapper leaves it. */
    @Override
    public void close() {
    }
  }
}
