/**
 * The Kafka {@link io.sumi.outbox.OutboxPublisher}: an idempotent producer with {@code acks=all}
 * that waits for every acknowledgement. Needs {@code org.apache.kafka:kafka-clients}.
 */
@NullMarked
package io.sumi.outbox.kafka;

import org.jspecify.annotations.NullMarked;
