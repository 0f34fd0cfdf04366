/**
 * The exceptions Sumi's consumer side throws, and {@link io.sumi.consumer.exception.BatchFailedException}, which a batch
 * handler throws to say where it stopped.
 *
 * <p>Every exception Sumi raises itself extends {@link io.sumi.consumer.exception.IdempotencyException}; what each
 * means for the message (retried, dead-lettered, held for reconciliation) is listed in
 * {@code docs/consumer-semantics.md}; each refusal names its {@link io.sumi.consumer.exception.Verdict} itself.
 * {@code BudgetExhaustedException} lives beside the budgets in the optional module sumi-budgets,
 * {@code io.sumi.budget}.
 */
@NullMarked
package io.sumi.consumer.exception;

import org.jspecify.annotations.NullMarked;
