/**
 * The processed-messages ledger: the store SPI ({@link io.sumi.store.ProcessedMessageStore}) that
 * Sumi's consumers use to claim, complete and release message ids, and a Caffeine front cache.
 */
@NullMarked
package io.sumi.store;

import org.jspecify.annotations.NullMarked;
