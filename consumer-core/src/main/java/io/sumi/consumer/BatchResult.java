package io.sumi.consumer;

/**
 * The result of an {@link IdempotentExecutor#executeBatch} call that did not fail.
 *
 * @param processed how many messages the handler processed
 * @param duplicates how many messages were skipped as already completed (or repeated in the batch)
 */
public record BatchResult(int processed, int duplicates) {}
