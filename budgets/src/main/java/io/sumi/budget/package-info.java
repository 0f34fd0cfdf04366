/**
 * Budgets for paid APIs: a named spending limit per sliding time window, enforced by a
 * Resilience4j circuit breaker per budget that opens when the next call would exceed the limit (and,
 * as any breaker, when calls fail too often), so a runaway retry loop stops at the budget instead
 * of at the invoice. Framework-free; the Spring Boot starter binds {@code sumi.budgets.*} to a
 * {@link io.sumi.budget.BudgetRegistry}, and the Kafka binder pauses listener containers
 * while their budget is exhausted.
 */
@NullMarked
package io.sumi.budget;

import org.jspecify.annotations.NullMarked;
