/**
 * Sumi's consumer core: {@link io.sumi.consumer.IdempotentHandler}, the framework-free
 * {@link io.sumi.consumer.IdempotentExecutor} that runs the claim → run → complete / release state
 * machine, key resolution, {@link io.sumi.consumer.IdempotencyContext} and the ledger pruner.
 */
@NullMarked
package io.sumi.consumer;

import org.jspecify.annotations.NullMarked;
