package io.github.listing;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;

import scala.jdk.javaapi.CollectionConverters;

/**
 * Java and Scala 2.13 collections, one way and the other (Spark 4's Scala). One class of this
 * name per Scala version ({@code java/scala-<version>/}), so shared sources compile on both.
 */
final class Scala {

  private Scala() {
  }

  /** {@code items} as an immutable Scala list, in their order. */
  static <T> scala.collection.immutable.List<T> list(Collection<T> items) {
    return CollectionConverters.asScala(new ArrayList<>(items)).toList();
  }

  /** A view of {@code seq} as a Java list. */
  static <T> List<T> java(scala.collection.Seq<T> seq) {
    return CollectionConverters.asJava(seq);
  }

  /** A view of {@code map} as a Java map. */
  static <K, V> Map<K, V> java(scala.collection.Map<K, V> map) {
    return CollectionConverters.asJava(map);
  }

  /** {@code map} as an immutable Scala map. */
  @SuppressWarnings("unchecked")
  static <K, V> scala.collection.immutable.Map<K, V> map(Map<K, V> map) {
    return (scala.collection.immutable.Map<K, V>)
        scala.collection.immutable.Map$.MODULE$.from(CollectionConverters.asScala(map));
  }
}
