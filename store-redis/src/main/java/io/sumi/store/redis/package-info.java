/**
 * The processed-messages ledger on Redis or Valkey
 * ({@link io.sumi.store.redis.RedisProcessedMessageStore}), for lease-mode consumers, and the fleet
 * budgets' spend store beside it ({@link io.sumi.store.redis.RedisSpendStore}, which needs
 * {@code io.sumi:sumi-budgets}, an optional dependency of this module).
 */
@NullMarked
package io.sumi.store.redis;

import org.jspecify.annotations.NullMarked;
