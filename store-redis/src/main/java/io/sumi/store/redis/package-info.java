/**
 * The processed-messages ledger on Redis or Valkey
 * ({@link io.sumi.store.redis.RedisProcessedMessageStore}), for lease-mode consumers.
 */
@NullMarked
package io.sumi.store.redis;

import org.jspecify.annotations.NullMarked;
