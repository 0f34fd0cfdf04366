/**
 * Spring Boot auto-configuration for Sumi: the ledger, the executor, the pruning job and the
 * Spring Kafka binder, configured under {@code sumi.*}.
 */
@NullMarked
package io.sumi.autoconfigure;

import org.jspecify.annotations.NullMarked;
