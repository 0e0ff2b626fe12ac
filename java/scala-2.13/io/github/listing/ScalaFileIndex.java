package io.github.listing;

import java.util.List;

import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.execution.datasources.FileIndex;
import org.apache.spark.sql.execution.datasources.PartitionDirectory;

/**
 * A {@link FileIndex} whose Scala-typed methods are Java ones: {@code FileIndex}'s sequences
 * are Scala 2.13's {@code Seq} (Spark 4), a type an override must name exactly. One class of this
 * name per Scala version ({@code java/scala-<version>/}).
 */
public abstract class ScalaFileIndex implements FileIndex {

  /** The index's root paths. */
  protected abstract List<Path> roots();

  /** The files of the partitions that pass {@code partitionFilters}, as {@link #listFiles}. */
  protected abstract List<PartitionDirectory> files(List<Expression> partitionFilters,
      List<Expression> dataFilters);

  @Override
  public final scala.collection.immutable.Seq<Path> rootPaths() {
    return Scala.list(roots());
  }

  @Override
  public final scala.collection.immutable.Seq<PartitionDirectory> listFiles(
      scala.collection.immutable.Seq<Expression> partitionFilters, scala.collection.immutable.Seq<Expression> dataFilters) {
    return Scala.list(files(Scala.java(partitionFilters), Scala.java(dataFilters)));
  }
}
