package io.github.listing;

import java.util.function.Function;

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;

import scala.Function1;
import scala.runtime.AbstractPartialFunction;

/**
 * The Scala partial function {@code transformUp}/{@code transformDown} take, made from a Java
 * function that returns the rewritten node, or null where the node is left as it is. Each of
 * the extension's rules is such a function.
 */
final class NodeRewrite extends AbstractPartialFunction<LogicalPlan, LogicalPlan> {

  private final Function<LogicalPlan, LogicalPlan> rewrite;

  NodeRewrite(Function<LogicalPlan, LogicalPlan> rewrite) {
    this.rewrite = rewrite;
  }

  @Override
  public boolean isDefinedAt(LogicalPlan plan) {
    return rewrite.apply(plan) != null;
  }

  @Override
  @SuppressWarnings("unchecked")
  public <A1 extends LogicalPlan, B1> B1 applyOrElse(A1 plan, Function1<A1, B1> fallback) {
    LogicalPlan rewritten = rewrite.apply(plan);
    return rewritten == null ? fallback.apply(plan) : (B1) rewritten;
  }
}
