/**
 * {@code @IdempotentHandler} on share-group (KIP-932) {@code @KafkaListener}s, Spring Kafka 4.1:
 * Sumi settles each record's acknowledgement (docs/kafka-share-groups.md).
 */
@NullMarked
package io.sumi.kafka.share;

import org.jspecify.annotations.NullMarked;
