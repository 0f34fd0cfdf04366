/**
 * Sumi for Spring Kafka: {@link io.sumi.consumer.IdempotentHandler} on {@code @KafkaListener}
 * record and batch listeners, whatever their parameter style, and error-handler integration.
 */
@NullMarked
package io.sumi.kafka;

import org.jspecify.annotations.NullMarked;
