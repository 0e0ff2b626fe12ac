package io.github.listing;

import org.apache.spark.sql.SparkSessionExtensions;

import scala.runtime.AbstractFunction1;
import scala.runtime.BoxedUnit;

/**
 * {@code spark.sql.extensions} entry point of Spark 3.5's jar: it injects no rule. Every rule
 * of Spark 4's extension rewrites relations of the Python {@code listing} source, which Spark
 * 3.5 has not; there {@code listing} is this jar's JVM source ({@link
 * ListingRelationProvider}), which builds Spark's own file source relation itself. The class
 * exists so that a session is configured the same way on every line.
 */
public final class ListingSparkExtensions
    extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {

  @Override
  public BoxedUnit apply(SparkSessionExtensions extensions) {
    return BoxedUnit.UNIT;
  }
}
