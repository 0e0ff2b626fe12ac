package io.github.listing;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;

import scala.Predef$;
import scala.Tuple2;
import scala.collection.JavaConverters;

/**
 * Java and Scala 2.12 collections, one way and the other (Spark 3.5's Scala). One class of
 * this name per Scala version ({@code java/scala-<version>/}), so shared sources compile on
 * both.
 */
final class Scala {

  private Scala() {
  }

  /** {@code items} as an immutable Scala list, in their order. */
  static <T> scala.collection.immutable.List<T> list(Collection<T> items) {
    return JavaConverters.asScalaBufferConverter(new ArrayList<>(items)).asScala().toList();
  }

  /** A view of {@code seq} as a Java list. */
  static <T> List<T> java(scala.collection.Seq<T> seq) {
    return JavaConverters.seqAsJavaListConverter(seq).asJava();
  }

  /** A view of {@code map} as a Java map. */
  static <K, V> Map<K, V> java(scala.collection.Map<K, V> map) {
    return JavaConverters.mapAsJavaMapConverter(map).asJava();
  }

  /** {@code map} as an immutable Scala map. */
  static <K, V> scala.collection.immutable.Map<K, V> map(Map<K, V> map) {
    return JavaConverters.mapAsScalaMapConverter(map).asScala()
        .toMap(Predef$.MODULE$.<Tuple2<K, V>>$conforms());
  }
}
